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

/// A clean draft of `steps` steps: tool calls, model calls and maps, each after the one before.
pub(crate) fn draft(steps: usize) -> Vec<u8> {
    let mut list = Vec::with_capacity(steps);
    let mut i = 0;
    while i < steps {
        let id = format!("s{i}");
        let after = if i == 0 {
            vec![]
        } else {
            vec![format!("s{}", i - 1)]
        };
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
