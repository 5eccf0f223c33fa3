Content-Length: 10

{}