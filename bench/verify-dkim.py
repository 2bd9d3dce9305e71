#!/usr/bin/python3
"""verify-dkim.py: checks the DKIM signatures of messages with dkimpy
(Debian's python3-dkim), a verifier independent of relayq and OpenDKIM.

  /usr/bin/python3 bench/verify-dkim.py --records FILE --algo A FILE...

FILE... are messages as smtp-sink -d dumps them (LF line ends, its own
X-*/Received lines on top, which no signature covers). --records holds
one "NAME VALUE" line per published key (NAME the selector's record name,
VALUE its TXT text), served to dkimpy through dnsfunc, so no DNS is
needed. Every message must carry at least one DKIM-Signature, every
signature must verify, and each must use algorithm A (a=). Prints one
line per message and exits 1 if any fails.
"""
import argparse
import re
import sys

import dkim


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", required=True)
    ap.add_argument("--algo", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    records = {}
    with open(args.records) as f:
        for line in f:
            name, _, value = line.strip().partition(" ")
            records[name.rstrip(".").lower()] = value.encode()

    def dnsfunc(name, timeout=5):
        return records.get(name.decode().rstrip(".").lower())

    failed = 0
    for path in args.files:
        with open(path, "rb") as f:
            msg = f.read()
        # smtp-sink stores LF line ends; the message on the wire had CRLF.
        msg = re.sub(rb"\r?\n", b"\r\n", msg)
        d = dkim.DKIM(msg)
        n = len([h for h in d.headers if h[0].lower() == b"dkim-signature"])
        algos = re.findall(rb"(?im)^dkim-signature:(?:.|\r\n[ \t])*?\ba=([a-z0-9-]+)", msg)
        why = ""
        try:
            ok = n > 0 and all(d.verify(idx=i, dnsfunc=dnsfunc) for i in range(n))
        except dkim.DKIMException as e:  # a body hash mismatch raises
            ok, why = False, ": %s" % e
        if ok and any(a.decode() != args.algo for a in algos):
            ok, why = False, ": not %s" % args.algo
        print("%s %s (%d signature%s, a=%s)%s" % ("ok" if ok else "FAIL", path, n, "" if n == 1 else "s",
                                                ",".join(a.decode() for a in algos) or "-", why))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
