//! Which kind of lwirc file a document is, by its top-level members: the one rule the
//! editor and the command line share, so that a file given in the wrong place (a draft to
//! `goal create`, a draft and its definition swapped) is named as such instead of being
//! answered with every finding its misreading makes.

use crate::document::Node;

/// The kinds of file lwirc reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// An LWIR draft (a top-level `lwir`).
    Draft,
    /// A WorkflowDefinition (`tools` or `models`, and no `lwir`).
    Definition,
    /// A goal file (`goal` and `templates`).
    Goal,
}

impl FileKind {
    /// The kind whose members `has` says are there: a top-level `"lwir"` member is a
    /// draft, `"goal"` with `"templates"` a goal file, `"tools"` or `"models"` a
    /// definition. `None`: none of these.
    pub fn of_members(has: impl Fn(&str) -> bool) -> Option<FileKind> {
        if has("lwir") {
            Some(FileKind::Draft)
        } else if has("goal") && has("templates") {
            Some(FileKind::Goal)
        } else if has("tools") || has("models") {
            Some(FileKind::Definition)
        } else {
            None
        }
    }

    /// The kind of the document whose root is `root`.
    pub fn of(root: &Node) -> Option<FileKind> {
        Self::of_members(|key| root.get(key).is_some())
    }

    /// `a draft`, `a definition`, `a goal file`.
    pub fn noun(self) -> &'static str {
        match self {
            FileKind::Draft => "an LWIR draft",
            FileKind::Definition => "a workflow definition",
            FileKind::Goal => "a goal file",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(text: &str) -> Option<FileKind> {
        let read = crate::document::read(text.as_bytes().to_vec());
        FileKind::of(read.document.unwrap().root())
    }

    #[test]
    fn kinds_by_members() {
        assert_eq!(kind(r#"{"lwir":"0.1","tools":[]}"#), Some(FileKind::Draft));
        assert_eq!(kind(r#"{"goal":"g","templates":{}}"#), Some(FileKind::Goal));
        assert_eq!(
            kind(r#"{"name":"w","tools":[]}"#),
            Some(FileKind::Definition)
        );
        assert_eq!(kind(r#"{"goal":"g"}"#), None);
        assert_eq!(kind("[]"), None);
    }
}
