Content-Length: 2
Content-Length: 3

{}