//! "Did you mean" suggestions and how certain a replacement is.

use crate::finding::Applicability;

/// The best replacement for `wrong` among `candidates`, with how safely it may be applied.
///
/// A candidate exactly one edit away (Damerau–Levenshtein: insert, delete, substitute or
/// swap two adjacent characters) that no other candidate ties is
/// [`Applicability::MachineApplicable`]; otherwise the closest candidate within a third of
/// the length (at least one edit) is [`Applicability::MaybeIncorrect`]. Ties are broken by
/// candidate order, so results are deterministic.
pub fn suggest<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, Applicability)> {
    let mut best: Option<(&'a str, usize)> = None;
    let mut ties = 0;
    for candidate in candidates {
        if candidate == wrong {
            continue;
        }
        let d = strsim::damerau_levenshtein(wrong, candidate);
        match best {
            Some((_, bd)) if d > bd => {}
            Some((_, bd)) if d == bd => ties += 1,
            _ => {
                best = Some((candidate, d));
                ties = 0;
            }
        }
    }
    let (candidate, distance) = best?;
    let budget = (wrong.chars().count().max(candidate.chars().count()) / 3).max(1);
    if distance > budget {
        return None;
    }
    let applicability = if distance == 1 && ties == 0 {
        Applicability::MachineApplicable
    } else {
        Applicability::MaybeIncorrect
    };
    Some((candidate, applicability))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_unique_edit_is_machine_applicable() {
        let tools = ["github.list_issues", "github.add_label"];
        assert_eq!(
            suggest("github.list_isues", tools),
            Some(("github.list_issues", Applicability::MachineApplicable))
        );
        assert_eq!(
            suggest("github.lsit_issues", tools),
            Some(("github.list_issues", Applicability::MachineApplicable))
        );
        assert_eq!(
            suggest("github.list_isss", tools),
            Some(("github.list_issues", Applicability::MaybeIncorrect))
        );
        assert_eq!(suggest("slack.post", tools), None);
    }

    #[test]
    fn ties_are_not_machine_applicable() {
        assert_eq!(
            suggest("ab", ["aa", "bb"]),
            Some(("aa", Applicability::MaybeIncorrect))
        );
    }
}
