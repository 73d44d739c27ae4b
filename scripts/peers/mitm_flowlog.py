"""mitmproxy addon for interop tests: records what reached the proxy.

    mitmdump -s scripts/peers/mitm_flowlog.py --set flowlog=FILE --set tlslog=FILE ...

flowlog: one line per HTTP request the proxy received from a client, "METHOD URL", written as soon as the
request headers arrive (before anything is sent upstream). A client that refuses the proxy's certificate
never sends a request, so its flow log stays empty.
tlslog: one line per TLS handshake with a client: "clienthello SNI", then "established SNI" or
"failed SNI: ERROR". It shows that the client did reach the proxy, so an empty flow log is meaningful.
"""

from mitmproxy import ctx


def _append(path: str, line: str) -> None:
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()


class FlowLog:
    def load(self, loader):
        loader.add_option("flowlog", str, "", "File that receives one 'METHOD URL' line per client request.")
        loader.add_option("tlslog", str, "", "File that receives one line per client TLS handshake event.")

    def requestheaders(self, flow):
        _append(ctx.options.flowlog, f"{flow.request.method} {flow.request.pretty_url}")

    def tls_clienthello(self, data):
        _append(ctx.options.tlslog, f"clienthello {data.client_hello.sni or '-'}")

    def tls_established_client(self, data):
        _append(ctx.options.tlslog, f"established {data.conn.sni or '-'}")

    def tls_failed_client(self, data):
        _append(ctx.options.tlslog, f"failed {data.conn.sni or '-'}: {data.conn.error}")


addons = [FlowLog()]
