#!/usr/bin/env python3
"""Webhook receivers for Herald's tests, on 127.0.0.1 only, with Python's standard library.

    webhook_receiver.py record PORT_FILE OUT_DIR [CERT KEY]
        An HTTP/1.1-only receiver (http.server; over TLS with ALPN http/1.1 when CERT and KEY are
        given). Each POST is written to OUT_DIR/<n>.json as {"headers": [[name, value]...],
        "body": base64} and answered 200.
    webhook_receiver.py bomb-h1 PORT_FILE OUT_DIR
        A hostile HTTP/1.1 server: reads a request, then answers with header lines without end
        (until the client drops the connection, at most 64 MiB).
    webhook_receiver.py bomb-h2 PORT_FILE OUT_DIR CERT KEY
        A hostile HTTP/2 server over TLS (ALPN h2): answers the first stream with a HEADERS frame
        followed by CONTINUATION frames without end (at most 64 MiB).

The bound port is written to PORT_FILE once listening; OUT_DIR/requests counts the requests
the bombs saw.
"""
import base64
import http.server
import json
import os
import socket
import ssl
import struct
import sys
import threading

LIMIT = 64 * 1024 * 1024


def tls_context(cert, key, protocols):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(protocols)
    return context


def announce(port_file, port):
    temporary = port_file + ".tmp"
    with open(temporary, "w") as f:
        f.write(str(port))
    os.rename(temporary, port_file)


def count_request(out_dir):
    path = os.path.join(out_dir, "requests")
    with lock:
        n = int(open(path).read()) if os.path.exists(path) else 0
        with open(path, "w") as f:
            f.write(str(n + 1))


lock = threading.Lock()


def record(port_file, out_dir, cert=None, key=None):
    counter = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            with lock:
                counter[0] += 1
                n = counter[0]
            record = {"headers": [[k, v] for k, v in self.headers.items()], "body": base64.b64encode(body).decode()}
            temporary = os.path.join(out_dir, "%d.tmp" % n)
            with open(temporary, "w") as f:
                json.dump(record, f)
            os.rename(temporary, os.path.join(out_dir, "%d.json" % n))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if cert:
        server.socket = tls_context(cert, key, ["http/1.1"]).wrap_socket(server.socket, server_side=True)
    announce(port_file, server.server_address[1])
    server.serve_forever()


def read_request(connection):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return False
        data += chunk
    return True


def bomb_h1(port_file, out_dir):
    listener = socket.create_server(("127.0.0.1", 0))
    announce(port_file, listener.getsockname()[1])
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve_h1_bomb, args=(connection, out_dir), daemon=True).start()


def serve_h1_bomb(connection, out_dir):
    try:
        if not read_request(connection):
            return
        count_request(out_dir)
        connection.sendall(b"HTTP/1.1 200 OK\r\n")
        sent = 0
        line = b"X-Bomb: " + b"b" * 1016 + b"\r\n"
        while sent < LIMIT:
            connection.sendall(line)
            sent += len(line)
    except OSError:
        pass
    finally:
        connection.close()


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack_length(n):
    if n < 127:
        return bytes([n])
    out = [127]
    n -= 127
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    out.append(n)
    return bytes(out)


def bomb_h2(port_file, out_dir, cert, key):
    context = tls_context(cert, key, ["h2"])
    listener = socket.create_server(("127.0.0.1", 0))
    announce(port_file, listener.getsockname()[1])
    while True:
        raw, _ = listener.accept()
        threading.Thread(target=serve_h2_bomb, args=(raw, context, out_dir), daemon=True).start()


def serve_h2_bomb(raw, context, out_dir):
    try:
        connection = context.wrap_socket(raw, server_side=True)
        connection.sendall(frame(0x4, 0, 0, b""))
        buffer = b""
        stream = None
        while stream is None:
            chunk = connection.recv(65536)
            if not chunk:
                return
            buffer += chunk
            if buffer.startswith(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"):
                buffer = buffer[24:]
            while len(buffer) >= 9:
                length = int.from_bytes(buffer[0:3], "big")
                if len(buffer) < 9 + length:
                    break
                kind, flags = buffer[3], buffer[4]
                stream_id = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                buffer = buffer[9 + length:]
                if kind == 0x4 and not flags & 0x1:
                    connection.sendall(frame(0x4, 0x1, 0, b""))
                if kind == 0x1:
                    stream = stream_id
        count_request(out_dir)
        # :status 200 (static table index 8), then literal fields without indexing, new names.
        field = b"\x00" + hpack_length(6) + b"x-bomb" + hpack_length(1000) + b"b" * 1000
        block = b"\x88" + field * 15
        connection.sendall(frame(0x1, 0, stream, block))
        sent = len(block)
        while sent < LIMIT:
            connection.sendall(frame(0x9, 0, stream, field * 15))
            sent += len(field) * 15
    except OSError:
        pass
    finally:
        raw.close()


if __name__ == "__main__":
    mode, port_file, out_dir = sys.argv[1:4]
    rest = sys.argv[4:]
    {"record": record, "bomb-h1": bomb_h1, "bomb-h2": bomb_h2}[mode](port_file, out_dir, *rest)
