"""One device as its own process: ``python device_proc.py SPEC.json`` reports its history
in the open round through the SDK (:class:`~dprec.client.DeviceClient`) and prints one JSON
line (``{"reported": bool}`` or ``{"error": ...}``).

SPEC: server, proxy, client_id, token, state_dir, budget, items (the device's history),
n_items, and ``planted``: 32 bytes (hex) keying the device's ChaCha20 generator, so that a
test knows the seed bytes and can look for them in the services' state (they must never be
there)."""

from __future__ import annotations

import json
import sys

import numpy as np


def main(spec_path: str) -> None:
    from randomgen import ChaCha

    from dprec.client import DeviceClient, RandomSource

    spec = json.loads(open(spec_path).read())
    key = np.frombuffer(bytes.fromhex(spec["planted"]), dtype=np.uint64).copy()

    class Planted(RandomSource):
        """ChaCha20 under the planted key (a CSPRNG whose key the test knows)."""

        secure = True

        def generator(self) -> np.random.Generator:
            return np.random.Generator(ChaCha(key=key, counter=0, rounds=20))

    device = DeviceClient(spec["client_id"], spec["token"], spec["server"], spec["proxy"],
                          spec["state_dir"], spec["budget"], source=Planted())
    history = np.zeros(spec["n_items"])
    history[spec["items"]] = 1.0
    try:
        out = {"reported": device.report(history), "spent": device.ledger.spent}
    except Exception as e:  # noqa: BLE001 - reported to the test
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
