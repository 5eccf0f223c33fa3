//! The effects a bindings file describes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use lwir_model::http::Client;
use lwir_spec::Code;
use serde_json::{Value, json};

use super::mcp::Servers;
use super::{
    CodeOutcome, CodeRun, EffectError, Effects, LiveTool, ModelAnswer, ModelCall, Surface,
    ToolAnswer, ToolCall,
};
use crate::bindings::{Bindings, ModelBinding, ToolBinding};

/// Effects as `bindings` place them: command tools and models, tools of MCP servers (each
/// server started or reached once, on first use, and shut down when this is dropped: at
/// the run's end), models on an OpenAI-compatible server, `code.run` in the sandbox.
pub struct Bound {
    bindings: Bindings,
    clients: Mutex<BTreeMap<String, Arc<Client>>>,
    servers: Servers,
}

impl Bound {
    /// The effects of `bindings`.
    pub fn new(bindings: Bindings) -> Self {
        Self {
            servers: Servers::new(&bindings),
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

impl Effects for Bound {
    fn tool(&self, call: &ToolCall) -> Result<ToolAnswer, EffectError> {
        match self.bindings.tools.get(&call.tool) {
            Some(ToolBinding::Command(spec)) => super::command::call_tool(spec, call),
            Some(ToolBinding::Server {
                server,
                name,
                timeout,
                max_result,
            }) => self.servers.call(server, name, *timeout, *max_result, call),
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
        // Each server is listed once, after it settled — all of them at once, each started
        // on its own thread; a server that cannot be started or listed stops the run before
        // its first step (its drift could not be checked).
        let bound: Vec<(&str, &str, &str)> = tools
            .iter()
            .filter_map(|tool| match self.bindings.tools.get(*tool) {
                Some(ToolBinding::Server { server, name, .. }) => {
                    Some((*tool, server.as_str(), name.as_str()))
                }
                _ => None,
            })
            .collect();
        let servers: std::collections::BTreeSet<&str> = bound.iter().map(|b| b.1).collect();
        let listed: BTreeMap<&str, Result<BTreeMap<String, LiveTool>, EffectError>> =
            std::thread::scope(|scope| {
                let listing: Vec<_> = servers
                    .iter()
                    .map(|server| (*server, scope.spawn(|| self.servers.list(server))))
                    .collect();
                listing
                    .into_iter()
                    .map(|(server, handle)| {
                        let listed = handle.join().unwrap_or_else(|_| {
                            Err(EffectError::new(
                                Code::CapabilityUnavailable,
                                "listing its tools failed",
                            ))
                        });
                        (server, listed)
                    })
                    .collect()
            });
        for (tool, server, name) in bound {
            let live = match &listed[server] {
                Ok(live) => live,
                Err(e) => {
                    return Err(EffectError::new(
                        e.code,
                        format!(
                            "tool `{tool}` is bound to MCP server `{server}`, whose tools \
                             cannot be listed: {}",
                            e.message
                        ),
                    )
                    .at(lwir_spec::pointer::join("/servers", server)));
                }
            };
            match live.get(name) {
                Some(live) => {
                    surface.tools.insert(tool.to_owned(), live.clone());
                }
                None => {
                    surface.removed.insert(tool.to_owned());
                }
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
            Some(ToolBinding::Server { server, name, .. }) => {
                json!({ "server": server, "name": name })
            }
            None => Value::Null,
        }
    }
}
