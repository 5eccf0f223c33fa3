content-type: x
content-length:   2

{}