Content-Length: abc

{}