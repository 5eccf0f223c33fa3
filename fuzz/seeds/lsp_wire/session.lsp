Content-Length: 116

{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"general":{"positionEncodings":["utf-8"]}}}}Content-Length: 52

{"jsonrpc":"2.0","method":"initialized","params":{}}Content-Length: 1810

{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///w/draft.json","languageId":"json","version":1,"text":"{\n  \"lwir\": \"1\",\n  \"workflow\": \"issue-triage\",\n  \"steps\": [\n    { \"id\": \"issues\", \"kind\": \"tool.call\", \"tool\": \"github.list_issues\",\n      \"args\": { \"repo\": \"${ input.repo }\", \"state\": \"open\" } },\n    { \"id\": \"each\", \"kind\": \"map\", \"over\": \"${ steps.issues.output.items }\", \"as\": \"issue\", \"max_parallel\": 8,\n      \"steps\": [\n        { \"id\": \"classify\", \"kind\": \"model.call\", \"model\": \"fast\",\n          \"prompt\": \"Classify issue #${ issue.number }: ${ issue.title }\",\n          \"requires\": { \"quality\": \"standard\", \"capabilities\": [\"json_output\"] },\n          \"output\": { \"type\": \"object\", \"properties\": { \"label\": { \"enum\": [\"bug\", \"feature\", \"question\"] } },\n                      \"required\": [\"label\"] } },\n        { \"id\": \"label\", \"kind\": \"tool.call\", \"tool\": \"github.add_label\",\n          \"args\": { \"repo\": \"${ input.repo }\", \"number\": \"${ issue.number }\", \"label\": \"${ steps.classify.output.label }\" } }\n      ],\n      \"result\": \"${ steps.classify.output.label }\" },\n    { \"id\": \"tally\", \"kind\": \"reduce\", \"over\": \"${ steps.each.output }\", \"init\": 0, \"acc\": \"n\", \"as\": \"l\",\n      \"with\": \"${ l == 'bug' ? n + 1 : n }\" },\n    { \"id\": \"write\", \"kind\": \"model.call\", \"model\": \"deep\",\n      \"prompt\": \"Summarise: ${ size(steps.each.output) } issues, ${ steps.tally.output } bugs.\",\n      \"output\": { \"type\": \"object\", \"properties\": { \"summary\": { \"type\": \"string\" } }, \"required\": [\"summary\"] } }\n  ],\n  \"output\": \"${ steps.write.output }\"\n}\n"}}}Content-Length: 150

{"jsonrpc":"2.0","id":"h","method":"textDocument/hover","params":{"textDocument":{"uri":"file:///w/draft.json"},"position":{"line":4,"character":60}}}Content-Length: 38

{"jsonrpc":"2.0","id":2,"result":null}Content-Length: 63

{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}Content-Length: 44

{"jsonrpc":"2.0","id":4,"method":"shutdown"}Content-Length: 33

{"jsonrpc":"2.0","method":"exit"}