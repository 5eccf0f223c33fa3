//! An in-process implementation of [`Effects`] for tests and benchmarks: each tool, slot
//! and code language answers with a closure, and every call is counted.

use std::collections::BTreeMap;
use std::sync::Mutex;

use lwir_spec::Code;
use serde_json::Value;

use super::{
    CodeOutcome, CodeRun, EffectError, Effects, ModelAnswer, ModelCall, Surface, ToolAnswer,
    ToolCall, ToolValue,
};

type ToolFn = Box<dyn Fn(&ToolCall) -> Result<ToolAnswer, EffectError> + Send + Sync>;
type ModelFn = Box<dyn Fn(&ModelCall) -> Result<ModelAnswer, EffectError> + Send + Sync>;
type CodeFn = Box<dyn Fn(&CodeRun) -> Result<CodeOutcome, EffectError> + Send + Sync>;

/// Effects answered by closures.
#[derive(Default)]
pub struct Fake {
    tools: BTreeMap<String, ToolFn>,
    models: BTreeMap<String, ModelFn>,
    code: Option<CodeFn>,
    surface: Surface,
    calls: Mutex<Vec<Called>>,
}

/// One call a [`Fake`] answered.
#[derive(Clone, Debug, PartialEq)]
pub enum Called {
    /// A tool call.
    Tool(ToolCall),
    /// A model round.
    Model(ModelCall),
    /// A code run.
    Code(CodeRun),
}

impl Fake {
    /// Effects that answer nothing (every call fails) until given answers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tool `id` answers with `f`.
    pub fn tool(
        mut self,
        id: &str,
        f: impl Fn(&ToolCall) -> Result<ToolAnswer, EffectError> + Send + Sync + 'static,
    ) -> Self {
        self.tools.insert(id.to_owned(), Box::new(f));
        self
    }

    /// Tool `id` answers the JSON value `f` gives for its arguments.
    pub fn tool_json(self, id: &str, f: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        self.tool(id, move |call| {
            Ok(ToolAnswer {
                value: ToolValue::Json(f(&call.args)),
                is_error: false,
            })
        })
    }

    /// Slot `slot` answers with `f`.
    pub fn model(
        mut self,
        slot: &str,
        f: impl Fn(&ModelCall) -> Result<ModelAnswer, EffectError> + Send + Sync + 'static,
    ) -> Self {
        self.models.insert(slot.to_owned(), Box::new(f));
        self
    }

    /// Slot `slot` answers the text `f` gives for the request.
    pub fn model_text(
        self,
        slot: &str,
        f: impl Fn(&ModelCall) -> String + Send + Sync + 'static,
    ) -> Self {
        self.model(slot, move |call| {
            Ok(ModelAnswer {
                content: Some(f(call)),
                ..ModelAnswer::default()
            })
        })
    }

    /// Code bodies run with `f`.
    pub fn code(
        mut self,
        f: impl Fn(&CodeRun) -> Result<CodeOutcome, EffectError> + Send + Sync + 'static,
    ) -> Self {
        self.code = Some(Box::new(f));
        self
    }

    /// The surface [`Effects::surface`] reports.
    pub fn with_surface(mut self, surface: Surface) -> Self {
        self.surface = surface;
        self
    }

    /// Every call answered so far, in the order they came.
    pub fn calls(&self) -> Vec<Called> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// How many calls of tool `id` came.
    pub fn tool_calls(&self, id: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| matches!(c, Called::Tool(t) if t.tool == id))
            .count()
    }

    /// How many model rounds came.
    pub fn model_calls(&self) -> usize {
        self.calls()
            .iter()
            .filter(|c| matches!(c, Called::Model(_)))
            .count()
    }

    fn note(&self, called: Called) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(called);
        }
    }
}

impl Effects for Fake {
    fn tool(&self, call: &ToolCall) -> Result<ToolAnswer, EffectError> {
        self.note(Called::Tool(call.clone()));
        match self.tools.get(&call.tool) {
            Some(f) => f(call),
            None => Err(EffectError::new(
                Code::CapabilityUnavailable,
                format!("the fake has no tool `{}`", call.tool),
            )),
        }
    }

    fn model(&self, call: &ModelCall) -> Result<ModelAnswer, EffectError> {
        self.note(Called::Model(call.clone()));
        match self.models.get(&call.slot) {
            Some(f) => f(call),
            None => Err(EffectError::new(
                Code::CapabilityUnavailable,
                format!("the fake has no model slot `{}`", call.slot),
            )),
        }
    }

    fn code(&self, run: &CodeRun) -> Result<CodeOutcome, EffectError> {
        self.note(Called::Code(run.clone()));
        match &self.code {
            Some(f) => f(run),
            None => Err(EffectError::new(
                Code::CapabilityUnavailable,
                "the fake runs no code",
            )),
        }
    }

    fn surface(&self, _tools: &[&str], _slots: &[&str]) -> Result<Surface, EffectError> {
        Ok(self.surface.clone())
    }

    fn via(&self, tool: &str) -> Value {
        serde_json::json!({ "fake": tool })
    }
}
