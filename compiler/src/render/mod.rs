//! Renderers: the same findings for people ([`human`]), programs ([`json`], the wire
//! contract) and editors and code-scanning services ([`sarif`]). Each wire format is its own
//! set of `Serialize` view structs, so changing an internal type cannot change the contract
//! by accident. Every string from a draft or a planner printed for people goes through
//! [`terminal::sanitize`].

pub mod human;
pub mod json;
pub mod sarif;
pub mod terminal;

use lwir_spec::Origin;
use lwir_spec::span::{LineColumn, Locator};

use crate::pipeline::Validation;

/// Line/column lookups for both files of a validation.
pub(crate) struct Locators<'a> {
    draft: Locator<'a>,
    definition: Option<Locator<'a>>,
}

impl<'a> Locators<'a> {
    pub(crate) fn new(validation: &'a Validation) -> Self {
        Self {
            draft: Locator::new(validation.bytes(Origin::Draft)),
            definition: validation
                .definition
                .as_ref()
                .map(|_| Locator::new(validation.bytes(Origin::Definition))),
        }
    }

    pub(crate) fn locate(&mut self, origin: Origin, offset: usize) -> LineColumn {
        match (origin, &mut self.definition) {
            (Origin::Definition, Some(l)) => l.locate(offset),
            _ => self.draft.locate(offset),
        }
    }
}
