#!/usr/bin/env python3
"""Writes the seeds of the `http` fuzz target into Corpus/http/ (run once; the output is committed).

A seed is a configuration byte, a chunk-size byte and the server's bytes (see HTTPTarget.swift): bit 0 of the
configuration selects HTTP/2, whose server bytes follow a fixed preface and so start with the frames of stream 1.
"""
import gzip
import os
import struct
import zlib

corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Corpus", "http")
os.makedirs(corpus, exist_ok=True)

H2, DECOMPRESS, TIGHT, TIMEOUT, DEADLINE, ABANDON, HEAD, POST, CLOSE = 1, 2, 4, 8, 16, 32, 64, 128, 192


def seed(name, flags, chunk, server):
    with open(os.path.join(corpus, name), "wb") as f:
        f.write(bytes([flags, chunk]) + server)


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(index, value):
    """An HPACK literal without indexing whose name is static-table entry `index` (RFC 7541 section 6.2.2)."""
    prefix = bytes([index]) if index < 15 else bytes([15, index - 15])
    return prefix + bytes([len(value)]) + value


DATA, HEADERS, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 5, 6, 7, 8, 9
END_STREAM, END_HEADERS = 1, 4
STATUS_200, STATUS_204, STATUS_304 = b"\x88", b"\x89", b"\x8b"
CONTENT_LENGTH, CONTENT_ENCODING, CONTENT_TYPE = 28, 26, 31
hello = b"hello"
zipped = gzip.compress(b"hello " * 200, mtime=0)
bomb = gzip.compress(b"\0" * 100_000, mtime=0)

# HTTP/1.1
seed("h1-200-length", 0, 0, b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello")
seed("h1-chunked", 0, 7,
     b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n")
seed("h1-gzip", DECOMPRESS, 0,
     b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(zipped) + zipped)
seed("h1-deflate-bomb", DECOMPRESS | TIGHT, 64,
     b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n\r\n"
     + b"%x\r\n" % len(zlib.compress(b"\0" * 100_000)) + zlib.compress(b"\0" * 100_000) + b"\r\n0\r\n\r\n")
seed("h1-100-continue", POST, 0,
     b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
     b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
seed("h1-304", 0, 0, b"HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nContent-Length: 10\r\n\r\n")
seed("h1-head", HEAD, 0, b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
seed("h1-bad-header", 0, 0, b"HTTP/1.1 200 OK\r\nBad Header\r\nContent-Length: 1\r\n\r\nx")
seed("h1-eof-body", CLOSE, 3, b"HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nthe body ends when the server closes")
seed("h1-101", 0, 0,
     b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello")
seed("h1-truncated-timeout", TIMEOUT, 0, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel")
seed("h1-deadline", DEADLINE, 0, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n")
seed("h1-abandon", ABANDON, 9, b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n0123456789abcdefghij")
seed("h1-pipelined-extra", 0, 0,
     b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
seed("h1-both-lengths", 0, 0,
     b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")

# HTTP/2 (after the fixed server preface)
ok_headers = STATUS_200 + literal(CONTENT_LENGTH, b"5") + literal(CONTENT_TYPE, b"text/plain")
seed("h2-200-length", H2, 0,
     frame(HEADERS, END_HEADERS, 1, ok_headers) + frame(DATA, END_STREAM, 1, hello))
seed("h2-204", H2, 0, frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_204))
seed("h2-304", H2, 0, frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_304 + literal(CONTENT_LENGTH, b"9")))
seed("h2-gzip", H2 | DECOMPRESS, 0,
     frame(HEADERS, END_HEADERS, 1, STATUS_200 + literal(CONTENT_ENCODING, b"gzip"))
     + frame(DATA, 0, 1, zipped[:20]) + frame(DATA, END_STREAM, 1, zipped[20:]))
seed("h2-gzip-bomb", H2 | DECOMPRESS | TIGHT, 0,
     frame(HEADERS, END_HEADERS, 1, STATUS_200 + literal(CONTENT_ENCODING, b"gzip"))
     + frame(DATA, END_STREAM, 1, bomb))
seed("h2-100-continue", H2 | POST, 0,
     frame(HEADERS, END_HEADERS, 1, literal(8, b"100")) + frame(HEADERS, END_HEADERS, 1, ok_headers)
     + frame(DATA, END_STREAM, 1, hello))
seed("h2-trailers", H2, 0,
     frame(HEADERS, END_HEADERS, 1, STATUS_200) + frame(DATA, 0, 1, hello)
     + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x00\x07x-check\x02ok"))
seed("h2-rst-stream", H2, 0, frame(HEADERS, END_HEADERS, 1, STATUS_200) + frame(RST_STREAM, 0, 1, b"\0\0\0\x02"))
seed("h2-goaway", H2, 0, frame(GOAWAY, 0, 0, b"\0\0\0\0\0\0\0\x00"))
seed("h2-goaway-after-headers", H2, 0,
     frame(HEADERS, END_HEADERS, 1, STATUS_200) + frame(GOAWAY, 0, 0, b"\0\0\0\x01\0\0\0\x0b"))
seed("h2-ping-window", H2, 0,
     frame(PING, 0, 0, b"12345678") + frame(WINDOW_UPDATE, 0, 0, b"\0\0\x10\0")
     + frame(SETTINGS, 0, 0, b"\0\x04\0\0\xff\xff") + frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_200))
seed("h2-length-mismatch", H2, 0,
     frame(HEADERS, END_HEADERS, 1, STATUS_200 + literal(CONTENT_LENGTH, b"10")) + frame(DATA, END_STREAM, 1, hello))
seed("h2-continuation", H2, 5,
     frame(HEADERS, 0, 1, STATUS_200) + frame(CONTINUATION, END_HEADERS, 1, literal(CONTENT_LENGTH, b"0"))
     + frame(DATA, END_STREAM, 1))
seed("h2-push-promise", H2, 0,
     frame(PUSH_PROMISE, END_HEADERS, 1, b"\0\0\0\x02\x82\x84\x87\x41\x0cfuzz.example"))
seed("h2-timeout", H2 | TIMEOUT, 0, frame(HEADERS, END_HEADERS, 1, STATUS_200) + frame(DATA, 0, 1, hello))
seed("h2-abandon", H2 | ABANDON, 0,
     frame(HEADERS, END_HEADERS, 1, STATUS_200) + frame(DATA, 0, 1, hello) + frame(DATA, 0, 1, hello))
