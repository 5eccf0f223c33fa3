//! Generated drafts and their definition, shared by the benchmarks.

#![allow(dead_code, reason = "each benchmark uses a different subset")]

/// A definition with two tools and two slots, and limits that admit `steps` steps.
pub(crate) fn definition(steps: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "name": "bench",
        "models": {
            "fast": { "model": "acme/small-2", "quality": "standard", "capabilities": ["json_output"], "context_tokens": 32000 },
            "deep": { "model": "acme/large-5", "quality": "high", "capabilities": ["json_output", "tool_use"], "context_tokens": 200000 }
        },
        "tools": {
            "github.list_issues": {
                "description": "List issues",
                "input": { "type": "object", "properties": { "repo": { "type": "string" }, "state": { "enum": ["open", "closed"] } },
                           "required": ["repo"], "additionalProperties": false },
                "output": { "type": "object", "properties": { "items": { "type": "array" } }, "required": ["items"] }
            },
            "github.add_label": {
                "description": "Add a label",
                "input": { "type": "object", "properties": { "repo": { "type": "string" }, "number": { "type": "integer" }, "label": { "type": "string" } },
                           "required": ["repo", "number", "label"], "additionalProperties": false },
                "output": { "type": "object", "properties": { "ok": { "type": "boolean" } } }
            }
        },
        "limits": { "max_steps": steps + 1, "max_parallel": 16, "max_loop_iterations": 100 }
    }))
    .unwrap()
}

/// What step `i` of a generated draft runs after: the step before it, if any.
fn after_the_one_before(i: usize) -> Vec<String> {
    if i == 0 {
        vec![]
    } else {
        vec![format!("s{}", i - 1)]
    }
}

/// A clean draft of `steps` steps: tool calls, model calls and maps, each after the one before.
pub(crate) fn draft(steps: usize) -> Vec<u8> {
    let mut list = Vec::with_capacity(steps);
    let mut i = 0;
    while i < steps {
        let id = format!("s{i}");
        let after = after_the_one_before(i);
        let step = match i % 3 {
            0 => {
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.list_issues", "after": after,
                                     "args": { "repo": "${ input.repo }", "state": "open" } })
            }
            1 => {
                serde_json::json!({ "id": id, "kind": "model.call", "model": "fast", "after": after,
                                     "prompt": "Classify: ${ input.repo }",
                                     "requires": { "quality": "standard", "capabilities": ["json_output"] },
                                     "output": { "type": "object", "properties": { "label": { "enum": ["bug", "feature"] } }, "required": ["label"] } })
            }
            _ if i + 1 < steps => {
                i += 1;
                serde_json::json!({ "id": id, "kind": "map", "over": "${ input.items }", "as": "item", "max_parallel": 8, "after": after,
                                    "steps": [ { "id": format!("s{i}"), "kind": "tool.call", "tool": "github.add_label",
                                                 "args": { "repo": "${ input.repo }", "number": 1, "label": "bug" } } ],
                                    "result": "${ item }" })
            }
            _ => {
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.list_issues", "after": after,
                                     "args": { "repo": "${ input.repo }" } })
            }
        };
        list.push(step);
        i += 1;
    }
    serde_json::to_vec_pretty(
        &serde_json::json!({ "lwir": "1", "workflow": "bench", "steps": list }),
    )
    .unwrap()
}

/// A draft of `steps` steps in which every `every`-th tool call names a misspelt tool, each
/// with a machine-applicable fix.
pub(crate) fn misspelt_draft(steps: usize, every: usize) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(&draft(steps)).unwrap();
    for (i, step) in value["steps"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        if i % every == 0 && step["tool"] == "github.list_issues" {
            step["tool"] = serde_json::json!("github.list_isues");
        }
    }
    serde_json::to_vec_pretty(&value).unwrap()
}

/// The definition for [`real_draft`]: [`definition`]'s tools and models, the list's items
/// typed (number, title, state, labels), a tool that fetches one issue, and limits that
/// admit `steps` steps.
pub(crate) fn real_definition(steps: usize) -> Vec<u8> {
    let mut value: serde_json::Value = serde_json::from_slice(&definition(steps)).unwrap();
    value["tools"]["github.list_issues"]["output"] = serde_json::json!({
        "type": "object",
        "properties": {
            "items": { "type": "array", "items": {
                "type": "object",
                "properties": {
                    "number": { "type": "integer" },
                    "title": { "type": "string" },
                    "body": { "type": "string" },
                    "state": { "enum": ["open", "closed"] },
                    "labels": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["number", "title", "state", "labels"]
            } },
            "total": { "type": "integer" }
        },
        "required": ["items", "total"]
    });
    value["tools"]["github.comment"] = serde_json::json!({
        "description": "Comment on an issue",
        "input": { "type": "object", "properties": { "repo": { "type": "string" }, "number": { "type": "integer" }, "body": { "type": "string" } },
                   "required": ["repo", "number", "body"], "additionalProperties": false },
        "output": { "type": "object", "properties": { "id": { "type": "integer" } }, "required": ["id"] }
    });
    serde_json::to_vec(&value).unwrap()
}

/// A clean draft of `steps` steps whose expressions look like the ones planners write:
/// `map`/`filter`/`exists` macros with lambdas inside templates, `size()`, ternaries,
/// arithmetic and comparisons, string methods, `has()`, member and index chains, several
/// interpolations per template, and a `map` then a `reduce` every few steps. Each step reads
/// the steps before it (validated against [`real_definition`]).
pub(crate) fn real_draft(steps: usize) -> Vec<u8> {
    let mut list = Vec::with_capacity(steps);
    let mut i = 0;
    // The latest list_issues step, model call and map.
    let (mut list_step, mut model_step, mut map_step) =
        (None::<String>, None::<String>, None::<String>);
    while i < steps {
        let id = format!("s{i}");
        let after = after_the_one_before(i);
        let step = match (i % 8, &list_step, &model_step, &map_step) {
            (0, _, _, _) | (_, None, _, _) => {
                let state = match &list_step {
                    None => "${ size(input.repo) > 0 ? 'open' : 'closed' }".to_owned(),
                    Some(l) => format!("${{ steps.{l}.output.total > 10 ? 'open' : 'closed' }}"),
                };
                list_step = Some(id.clone());
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.list_issues", "after": after,
                                     "args": { "repo": "${ input.repo.lower() }", "state": state } })
            }
            (1 | 5, Some(l), _, _) => {
                model_step = Some(id.clone());
                serde_json::json!({ "id": id, "kind": "model.call", "model": "fast", "after": after,
                                     "prompt": format!(
                                        "Classify the ${{ size(steps.{l}.output.items) }} issues of ${{ input.repo }} \
                                         (${{ steps.{l}.output.items.filter(i, i.state == 'open').size() }} open): \
                                         ${{ steps.{l}.output.items.map(i, '#' + string(i.number) + ' ' + i.title.trim()).join(', ') }}; \
                                         labelled: ${{ steps.{l}.output.items.exists(i, 'bug' in i.labels) ? 'some' : 'none' }}"),
                                     "requires": { "quality": "standard", "capabilities": ["json_output"] },
                                     "output": { "type": "object", "properties": { "label": { "enum": ["bug", "feature"] },
                                                 "score": { "type": "number" } }, "required": ["label", "score"] } })
            }
            (2 | 6, Some(l), Some(m), _) => {
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.add_label", "after": after,
                                     "args": { "repo": "${ input.repo }",
                                               "number": format!("${{ size(steps.{l}.output.items) > 0 ? steps.{l}.output.items[0].number : steps.{l}.output.total * 2 - 1 }}"),
                                               "label": format!("${{ steps.{m}.output.score >= 0.5 && steps.{m}.output.label == 'bug' ? 'bug' : 'feature' }}") } })
            }
            (3, Some(l), _, _) if i + 1 < steps => {
                i += 1;
                map_step = Some(id.clone());
                serde_json::json!({ "id": id, "kind": "map",
                                    "over": format!("${{ steps.{l}.output.items.filter(i, i.number % 2 == 0 && size(i.labels) < 3) }}"),
                                    "as": "issue", "max_parallel": 8, "after": after,
                                    "steps": [ { "id": format!("s{i}"), "kind": "tool.call", "tool": "github.comment",
                                                 "args": { "repo": "${ input.repo }", "number": "${ issue.number + 0 }",
                                                           "body": "Seen #${ issue.number }: ${ issue.title.upper() } (${ has(issue.body) ? size(issue.body) : 0 } chars, ${ issue.labels.join('/') })" } } ],
                                    "result": "${ issue.labels.size() + issue.number * 2 }" })
            }
            (4 | 7, _, _, Some(p)) => {
                serde_json::json!({ "id": id, "kind": "reduce", "after": after,
                                    "over": format!("${{ steps.{p}.output }}"),
                                    "init": 0, "acc": "n", "as": "x",
                                    "with": "${ x > 1 ? n + x : n - (x % 3) }" })
            }
            (_, Some(l), _, _) => {
                serde_json::json!({ "id": id, "kind": "tool.call", "tool": "github.comment", "after": after,
                                     "args": { "repo": "${ input.repo }",
                                               "number": format!("${{ steps.{l}.output.items.size() }}"),
                                               "body": format!("${{ steps.{l}.output.items.map(i, i.title).filter(t, t.startsWith('fix')).size() }} fixes, first: ${{ size(steps.{l}.output.items) > 0 ? steps.{l}.output.items[0].title : 'none' }}") } })
            }
        };
        list.push(step);
        i += 1;
    }
    serde_json::to_vec_pretty(
        &serde_json::json!({ "lwir": "1", "workflow": "bench", "steps": list }),
    )
    .unwrap()
}
