//! Where templates come from: the registry, behind [`Templates`], so that the goal layer
//! reads registered versions without depending on how or where they are stored.

use lwir_validators::types::Ty;

/// A registered version as a goal uses it: verified (its LWIR re-hashed to its digest) and
/// with the interface its registration recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    /// The WorkflowVersion, `sha256:<64 hex>`.
    pub version: String,
    /// The workflow's name.
    pub workflow: String,
    /// The LWIR document's `description`, when it has one.
    pub description: Option<String>,
    /// The definition's input schema (`null`: none).
    pub input: serde_json::Value,
    /// The definition's output schema (`null`: none).
    pub output: serde_json::Value,
    /// The registered LWIR (its canonical form), for a runner.
    pub lwir: serde_json::Value,
}

impl Template {
    /// The type of the values its input schema accepts (anything without one).
    pub fn input_type(&self) -> Ty {
        schema_type(&self.input)
    }

    /// The type of the values its output schema accepts (anything without one).
    pub fn output_type(&self) -> Ty {
        schema_type(&self.output)
    }
}

fn schema_type(schema: &serde_json::Value) -> Ty {
    if schema.is_null() {
        Ty::Any
    } else {
        Ty::from_json_schema(schema, schema)
    }
}

/// Why a version could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// No such version is registered.
    #[error("{version} is not registered in {registry}")]
    NotRegistered {
        /// The version asked for.
        version: String,
        /// Where it was looked for.
        registry: String,
    },
    /// It is registered, but its stored bytes do not verify.
    #[error("{version} does not verify: {detail}")]
    Corrupt {
        /// The version asked for.
        version: String,
        /// What is wrong.
        detail: String,
    },
    /// Its registration does not record the definition's input and output schemas.
    #[error("the registration of {version} does not record its interface")]
    NoInterface {
        /// The version asked for.
        version: String,
    },
    /// The registry could not be read at all.
    #[error("cannot read the registry: {detail}")]
    Unavailable {
        /// What went wrong.
        detail: String,
    },
}

/// Registered versions, each verified on every read.
pub trait Templates: Sync {
    /// The version `version` (`sha256:<64 hex>`), verified, with its interface.
    fn template(&self, version: &str) -> Result<Template, TemplateError>;
}
