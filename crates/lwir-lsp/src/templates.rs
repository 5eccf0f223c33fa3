//! The templates a goal file's hovers show, read from the registry once per registry and
//! version: a version is content-addressed, so a template read and verified once is that
//! template for good. A registry over the network (`oci://…`) is read on a thread of its
//! own, never on the message thread: the hover that asks first is told the template is on
//! its way, the next one shows it — an editor never waits for a registry that is slow or
//! silent. A directory registry is read at once (it is local); what it lacks is asked again
//! at the next hover (it may be registered meanwhile).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use lwir_goals::catalog::{Template, TemplateError, Templates};

/// How long a network registry's failure is kept before the next hover asks again.
const FAILED_FOR: Duration = Duration::from_secs(10);

/// What is known of one version in one registry.
enum Entry {
    /// Read and verified.
    Ready(Template),
    /// Being read on a thread of its own.
    Pending,
    /// Could not be read, at that time.
    Failed(TemplateError, Instant),
}

/// Templates by (registry location, version), shared with the threads that read them.
#[derive(Clone, Default)]
pub(crate) struct TemplateCache {
    entries: Arc<Mutex<HashMap<(String, String), Entry>>>,
}

impl TemplateCache {
    /// The templates of the registry at `location` (a directory or an `oci://` URL), as
    /// hovers see them.
    pub(crate) fn of(&self, location: &str) -> View<'_> {
        View {
            cache: self,
            location: location.to_owned(),
            remote: lwir_registry::OciUrl::parse(location).is_some(),
        }
    }
}

/// One registry's templates, through the cache.
pub(crate) struct View<'a> {
    cache: &'a TemplateCache,
    location: String,
    remote: bool,
}

impl Templates for View<'_> {
    fn template(&self, version: &str) -> Result<Template, TemplateError> {
        let key = (self.location.clone(), version.to_owned());
        let mut entries = self
            .cache
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match entries.get(&key) {
            Some(Entry::Ready(t)) => return Ok(t.clone()),
            Some(Entry::Pending) => return Err(on_its_way(&self.location)),
            Some(Entry::Failed(e, at)) if at.elapsed() < FAILED_FOR => return Err(e.clone()),
            _ => {}
        }
        if !self.remote {
            drop(entries);
            let read = read(&self.location, version);
            if let Ok(t) = &read {
                self.cache
                    .entries
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, Entry::Ready(t.clone()));
            }
            return read;
        }
        entries.insert(key.clone(), Entry::Pending);
        drop(entries);
        let shared = Arc::clone(&self.cache.entries);
        let spawned = std::thread::Builder::new()
            .name("lsp-template".into())
            .spawn(move || {
                let entry = match read(&key.0, &key.1) {
                    Ok(t) => Entry::Ready(t),
                    Err(e) => Entry::Failed(e, Instant::now()),
                };
                shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, entry);
            });
        if let Err(e) = spawned {
            let failed = TemplateError::Unavailable {
                detail: format!("cannot start a thread to read it: {e}"),
            };
            self.cache
                .entries
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(
                    (self.location.clone(), version.to_owned()),
                    Entry::Failed(failed.clone(), Instant::now()),
                );
            return Err(failed);
        }
        Err(on_its_way(&self.location))
    }
}

/// What a hover says of a template still being read.
fn on_its_way(location: &str) -> TemplateError {
    TemplateError::Unavailable {
        detail: format!(
            "`{}` is being read in the background; hover again in a moment",
            lwir_spec::redact::redact(location)
        ),
    }
}

/// `version` read from the registry at `location` and verified.
fn read(location: &str, version: &str) -> Result<Template, TemplateError> {
    let registry = lwir_registry::open(location).map_err(|e| TemplateError::Unavailable {
        detail: e.to_string(),
    })?;
    lwir_goals::templates::RegistryTemplates::new(&registry, location.to_owned()).template(version)
}
