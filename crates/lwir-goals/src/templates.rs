//! The registry as the goal layer's source of templates: every read re-hashes what it
//! reads, so a template is only ever the version its digest names.

use lwir_registry::{Digest, Registry, RegistryError, Storage};

use crate::catalog::{Template, TemplateError, Templates};

/// [`Templates`] over a registry.
pub struct RegistryTemplates<'a, S: Storage> {
    registry: &'a Registry<S>,
    location: String,
}

impl<'a, S: Storage> RegistryTemplates<'a, S> {
    /// Templates read from `registry`, which `location` names in messages.
    pub fn new(registry: &'a Registry<S>, location: impl Into<String>) -> Self {
        Self {
            registry,
            location: location.into(),
        }
    }
}

impl<S: Storage + Sync> Templates for RegistryTemplates<'_, S> {
    fn template(&self, version: &str) -> Result<Template, TemplateError> {
        let not_registered = || TemplateError::NotRegistered {
            version: version.to_owned(),
            registry: self.location.clone(),
        };
        let digest = Digest::parse(version).ok_or_else(not_registered)?;
        let failed = |e: RegistryError| match e {
            RegistryError::Storage(e) => TemplateError::Unavailable {
                detail: e.to_string(),
            },
            other => TemplateError::Corrupt {
                version: version.to_owned(),
                detail: other.to_string(),
            },
        };
        let entry = self
            .registry
            .entry(&digest)
            .map_err(failed)?
            .ok_or_else(not_registered)?;
        let interface = entry.record.interface.ok_or(TemplateError::NoInterface {
            version: version.to_owned(),
        })?;
        let bytes = self.registry.lwir(&digest).map_err(failed)?;
        let lwir: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| TemplateError::Corrupt {
                version: version.to_owned(),
                detail: format!("its LWIR is not JSON ({e})"),
            })?;
        Ok(Template {
            version: digest.to_string(),
            workflow: entry.record.workflow,
            description: lwir
                .get("description")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
            input: interface.input,
            output: interface.output,
            lwir,
        })
    }
}
