//! "Did you mean" suggestions and how certain a replacement is.

use crate::finding::Applicability;

/// The best replacement for `wrong` among `candidates`, with how safely it may be applied.
///
/// Names are compared after folding case and the separators `_`, `-` and `.` into one
/// (`GitHub.List-Issues` reads as `github_list_issues`), then by Damerau–Levenshtein
/// distance (insert, delete, substitute or swap two adjacent characters). A replacement is
/// [`Applicability::MachineApplicable`] when no other candidate is as close and it differs
/// from `wrong` only in case and separators, or by one edit on names of at least three
/// characters; otherwise the closest candidate within a third of the length (at least one
/// edit) is [`Applicability::MaybeIncorrect`]. Ties are broken by candidate order, so
/// results are deterministic.
///
/// Cost: at most one distance per candidate, each bounded by the product of the two
/// lengths, and none for a candidate whose length alone puts it further than the best so
/// far; names longer than [`MAX_COMPARED`] bytes are not compared at all (hostile drafts).
pub fn suggest<'a>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, Applicability)> {
    if wrong.len() > MAX_COMPARED {
        return None;
    }
    let folded = fold(wrong);
    let length = wrong.chars().count();
    // (candidate, folded distance, raw distance)
    let mut best: Option<(&'a str, usize, usize)> = None;
    let mut ties = 0;
    for candidate in candidates {
        if candidate == wrong || candidate.len() > MAX_COMPARED {
            continue;
        }
        // The distance is at least the difference in length: a candidate that cannot be
        // as close as the best so far is not compared.
        if let Some((_, bd, _)) = best
            && candidate.chars().count().abs_diff(length) > bd
        {
            continue;
        }
        let d = strsim::damerau_levenshtein(&folded, &fold(candidate));
        let raw = strsim::damerau_levenshtein(wrong, candidate);
        match best {
            Some((_, bd, _)) if d > bd => {}
            // As close once folded: not unique, whichever is closer as written.
            Some((_, bd, braw)) if d == bd => {
                ties += 1;
                if raw < braw {
                    best = Some((candidate, d, raw));
                }
            }
            _ => {
                best = Some((candidate, d, raw));
                ties = 0;
            }
        }
    }
    let (candidate, distance, _) = best?;
    let budget = (wrong.chars().count().max(candidate.chars().count()) / 3).max(1);
    if distance > budget {
        return None;
    }
    let long_enough = wrong.chars().count() >= 3 && candidate.chars().count() >= 3;
    let certain = ties == 0 && (distance == 0 || (distance == 1 && long_enough));
    let applicability = if certain {
        Applicability::MachineApplicable
    } else {
        Applicability::MaybeIncorrect
    };
    Some((candidate, applicability))
}

/// Names longer than this (in bytes) are never compared: no real name is, and the distance
/// costs the product of the lengths.
pub const MAX_COMPARED: usize = 256;

/// `name` with case folded and `-` and `.` read as `_`.
fn fold(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '-' | '.' => '_',
            c => c.to_ascii_lowercase(),
        })
        .collect()
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
    fn case_and_separators_are_machine_applicable() {
        let tools = ["github.list_issues", "github.add_label"];
        for wrong in [
            "GitHub.List_Issues",
            "github_list_issues",
            "github.list-issues",
        ] {
            assert_eq!(
                suggest(wrong, tools),
                Some(("github.list_issues", Applicability::MachineApplicable)),
                "{wrong}"
            );
        }
        // Case and separators plus one edit.
        assert_eq!(
            suggest("GitHub.List-Isues", tools),
            Some(("github.list_issues", Applicability::MachineApplicable))
        );
        assert_eq!(
            suggest("FAST", ["fast", "deep"]),
            Some(("fast", Applicability::MachineApplicable))
        );
    }

    #[test]
    fn names_equal_once_folded_are_not_certain() {
        assert_eq!(
            suggest("a-b", ["a.b", "a_b"]),
            Some(("a.b", Applicability::MaybeIncorrect))
        );
    }

    #[test]
    fn ties_are_not_machine_applicable() {
        assert_eq!(
            suggest("ab", ["aa", "bb"]),
            Some(("aa", Applicability::MaybeIncorrect))
        );
        assert_eq!(
            suggest("fetch_a", ["fetch_b", "fetch_c"]),
            Some(("fetch_b", Applicability::MaybeIncorrect))
        );
    }

    #[test]
    fn one_edit_on_very_short_names_is_not_certain() {
        assert_eq!(
            suggest("ab", ["aa", "zzzz"]),
            Some(("aa", Applicability::MaybeIncorrect))
        );
    }

    #[test]
    fn hostile_lengths_are_not_compared() {
        let long = "a".repeat(MAX_COMPARED + 1);
        assert_eq!(suggest(&long, ["a"]), None);
    }
}
