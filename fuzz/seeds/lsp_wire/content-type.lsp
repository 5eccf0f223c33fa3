Content-Length: 44
Content-Type: application/vscode-jsonrpc; charset=utf-8

{"jsonrpc":"2.0","id":7,"method":"shutdown"}