//! The meta JSON Schemas (draft 2020-12) of LWIR documents and WorkflowDefinitions, and
//! the JSON Schema subset that schemas *inside* those documents may use.
//!
//! The schema files live in `crates/lwir-spec/schema/` for editors (point a `$schema` or an
//! editor's JSON Schema mapping at them) and are compiled into the crate from there.

/// The meta-schema of an LWIR version 1 document (`draft.json`).
pub const LWIR_META_SCHEMA: &str = include_str!("../schema/lwir-1.schema.json");

/// The meta-schema of a WorkflowDefinition (`workflow.json`).
pub const WORKFLOW_META_SCHEMA: &str = include_str!("../schema/workflow-1.schema.json");

/// The meta-schema of a goal file (`goal.json`), with the `apply` answer of a replan as
/// `#/$defs/proposal`.
pub const GOAL_META_SCHEMA: &str = include_str!("../schema/goal-1.schema.json");

/// The meta-schema of a bindings file (`lwir.bindings/1`): where the tools and model slots
/// of a version run (`lwirc run --bindings FILE`).
pub const BINDINGS_META_SCHEMA: &str = include_str!("../schema/bindings-1.schema.json");

/// The schema of the planner protocol `lwir-planner/1`: requests lwirc writes to a planner
/// (`#/$defs/request`) and the answers a planner writes back (`#/$defs/answer`).
pub const PLANNER_PROTOCOL_SCHEMA: &str = include_str!("../schema/planner-protocol-1.schema.json");

/// The schema of the runner protocol `lwir-runner/1`: the run requests `lwirc goal run`
/// writes (`#/$defs/request`) and the answers a runner writes back (`#/$defs/answer`).
pub const RUNNER_PROTOCOL_SCHEMA: &str = include_str!("../schema/runner-protocol-1.schema.json");

/// Keywords of the supported subset that constrain or structure values.
pub const SUBSET_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "$defs",
    "$ref",
];

/// Annotation keywords: allowed, and without effect on which values a schema accepts.
pub const ANNOTATION_KEYWORDS: &[&str] = &[
    "$schema",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "contentMediaType",
    "contentEncoding",
];

/// JSON Schema keywords outside the subset, with why each is refused.
pub const UNSUPPORTED_KEYWORDS: &[(&str, &str)] = &[
    (
        "if",
        "conditional schemas make compatibility undecidable in general",
    ),
    (
        "then",
        "conditional schemas make compatibility undecidable in general",
    ),
    (
        "else",
        "conditional schemas make compatibility undecidable in general",
    ),
    ("not", "negation makes compatibility undecidable in general"),
    (
        "dependentSchemas",
        "conditional schemas are outside the subset",
    ),
    (
        "dependentRequired",
        "conditional requirements are outside the subset",
    ),
    (
        "dependencies",
        "draft-07 conditional keyword, outside the subset",
    ),
    (
        "patternProperties",
        "properties are named explicitly in the subset",
    ),
    (
        "propertyNames",
        "properties are named explicitly in the subset",
    ),
    ("unevaluatedProperties", "use `additionalProperties`"),
    ("unevaluatedItems", "use `items` with `prefixItems`"),
    (
        "additionalItems",
        "draft-07 keyword; use `items` with `prefixItems`",
    ),
    (
        "contains",
        "existential array constraints are outside the subset",
    ),
    (
        "minContains",
        "existential array constraints are outside the subset",
    ),
    (
        "maxContains",
        "existential array constraints are outside the subset",
    ),
    (
        "multipleOf",
        "divisibility constraints are outside the subset",
    ),
    ("$id", "a schema inside LWIR cannot change its base URI"),
    ("$anchor", "use `$defs` with `#/$defs/<name>` references"),
    ("$dynamicRef", "dynamic references are outside the subset"),
    (
        "$dynamicAnchor",
        "dynamic references are outside the subset",
    ),
    ("$recursiveRef", "dynamic references are outside the subset"),
    (
        "$recursiveAnchor",
        "dynamic references are outside the subset",
    ),
    ("$vocabulary", "vocabularies are fixed by lwirc"),
    ("definitions", "draft-07 keyword; use `$defs`"),
];

/// JSON Schema's type names.
pub const TYPE_NAMES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "string", "integer",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_schemas_are_json() {
        for text in [LWIR_META_SCHEMA, WORKFLOW_META_SCHEMA] {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
        }
    }

    #[test]
    fn meta_schema_knows_the_fields_of_every_step_kind() {
        use crate::ir::{COMMON_STEP_FIELDS, StepKind};
        let v: serde_json::Value = serde_json::from_str(LWIR_META_SCHEMA).unwrap();
        let common: Vec<&str> = v["$defs"]["step"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(sorted(common), sorted(COMMON_STEP_FIELDS.to_vec()));
        for kind in StepKind::ALL {
            let props = v["$defs"][kind.as_str()]["properties"].as_object().unwrap();
            let fields: Vec<&str> = props.keys().map(String::as_str).collect();
            assert_eq!(
                sorted(fields),
                sorted(kind.fields().to_vec()),
                "{}",
                kind.as_str()
            );
        }
        let kinds: Vec<&str> = v["$defs"]["step"]["properties"]["kind"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            StepKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>()
        );
    }

    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
        v.sort_unstable();
        v
    }
}
