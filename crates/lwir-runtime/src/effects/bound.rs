//! The effects a bindings file describes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use lwir_model::http::Client;
use lwir_spec::Code;
use serde_json::{Value, json};

use super::{
    CodeOutcome, CodeRun, EffectError, Effects, ModelAnswer, ModelCall, Surface, ToolAnswer,
    ToolCall,
};
use crate::bindings::{Bindings, ModelBinding, ToolBinding};

/// Effects as `bindings` place them: command tools and models, models on an
/// OpenAI-compatible server, `code.run` in the sandbox. Tools over MCP fail with
/// [`Code::CapabilityUnavailable`] until `lwir-mcp` is wired in.
pub struct Bound {
    bindings: Bindings,
    clients: Mutex<BTreeMap<String, Arc<Client>>>,
}

impl Bound {
    /// The effects of `bindings`.
    pub fn new(bindings: Bindings) -> Self {
        Self {
            bindings,
            clients: Mutex::new(BTreeMap::new()),
        }
    }

    /// One client per server URL and key, made on first use.
    fn client(&self, url: &str, key_env: Option<&str>) -> Arc<Client> {
        let key = key_env.and_then(|name| std::env::var(name).ok());
        let id = format!("{url}\n{}", key_env.unwrap_or_default());
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(clients.entry(id).or_insert_with(|| {
            Arc::new(Client::new(url, key, std::time::Duration::from_secs(300)))
        }))
    }
}

fn mcp_unavailable(tool: &str, server: &str) -> EffectError {
    EffectError::new(
        Code::CapabilityUnavailable,
        format!(
            "tool `{tool}` is bound to MCP server `{server}`: tools over MCP are not available \
             in this build of lwirc yet (lwir-mcp is not wired in); bind it to a command"
        ),
    )
}

impl Effects for Bound {
    fn tool(&self, call: &ToolCall) -> Result<ToolAnswer, EffectError> {
        match self.bindings.tools.get(&call.tool) {
            Some(ToolBinding::Command(spec)) => super::command::call_tool(spec, call),
            Some(ToolBinding::Server { server, .. }) => Err(mcp_unavailable(&call.tool, server)),
            None => Err(EffectError::new(
                Code::CapabilityUnavailable,
                format!("tool `{}` is not bound", call.tool),
            )),
        }
    }

    fn model(&self, call: &ModelCall) -> Result<ModelAnswer, EffectError> {
        match self.bindings.model(&call.slot) {
            Some(ModelBinding::Command { spec, .. }) => super::command::call_model(spec, call),
            Some(ModelBinding::Http {
                url,
                api_key_env,
                timeout,
                ..
            }) => {
                super::http::call_model(&self.client(url, api_key_env.as_deref()), call, *timeout)
            }
            None => Err(EffectError::new(
                Code::CapabilityUnavailable,
                format!("model slot `{}` is not bound", call.slot),
            )),
        }
    }

    fn code(&self, run: &CodeRun) -> Result<CodeOutcome, EffectError> {
        super::code::run(run)
    }

    fn surface(&self, tools: &[&str], slots: &[&str]) -> Result<Surface, EffectError> {
        let mut surface = Surface::default();
        for tool in tools {
            if let Some(ToolBinding::Server { server, .. }) = self.bindings.tools.get(*tool) {
                // Its live description and schemas cannot be listed here: drift could not be
                // checked, so the run does not start.
                return Err(mcp_unavailable(tool, server));
            }
        }
        for slot in slots {
            if let Some(model) = self.bindings.model(slot).and_then(ModelBinding::model) {
                surface.models.insert((*slot).to_owned(), model.to_owned());
            }
        }
        Ok(surface)
    }

    fn via(&self, tool: &str) -> Value {
        match self.bindings.tools.get(tool) {
            Some(ToolBinding::Command(spec)) => json!({ "command": spec.command }),
            Some(ToolBinding::Server { server, name }) => json!({ "server": server, "name": name }),
            None => Value::Null,
        }
    }
}
