Content-Type: x

{}