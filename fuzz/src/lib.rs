//! Helpers shared by the fuzz targets.

use serde_json::Value as J;

/// The example WorkflowDefinition the planner-answer and fix targets validate against.
pub const DEFINITION: &[u8] = include_bytes!("../../examples/issue-triage/workflow.json");

/// The definition as a pipeline source.
pub fn definition() -> lwirc::pipeline::Source {
    lwirc::pipeline::Source {
        name: "workflow.json".to_owned(),
        bytes: DEFINITION.to_vec(),
    }
}

/// JSON equality with numbers compared by value: the reader keeps `-0` and `1` as
/// integers while `serde_json` may hold the same number as a double.
pub fn same_json(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Number(x), J::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}
