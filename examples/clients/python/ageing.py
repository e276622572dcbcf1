"""A client that calls without pause, to show connection ageing loses no call.

Against a server started with a short connection age (`--max-connection-age-secs 1`),
two threads on one channel call Score back to back for `--seconds` (60 by default) and
count every failed call; grpcio, like every gRPC library built on gRPC core, moves to
a new connection on the server's GOAWAY and retries a call the server refused unread.
Exits 1 if any call failed. Run by .ci/clients:

    python ageing.py --addr 127.0.0.1:50051 --seconds 60
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import threading
import time

import grpc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "gen"))
from allfives.v1 import allfives_pb2 as pb  # noqa: E402
from allfives.v1 import allfives_pb2_grpc as pb_grpc  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051")
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()

    with grpc.insecure_channel(args.addr) as channel:
        stub = pb_grpc.AllFivesServiceStub(channel)
        seats = [pb.SeatSetup(claim=True), pb.SeatSetup(claim=True)]
        new = stub.NewGame(pb.NewGameRequest(seats=seats), timeout=10)
        credential = {c.seat: c.credential for c in new.credentials}
        dealt = stub.Deal(pb.DealRequest(state=new.state), timeout=10)
        request = pb.ScoreRequest(state=dealt.state, viewer=0, credential=credential[0])

        calls = [0, 0]
        failures: list[str] = []
        deadline = time.monotonic() + args.seconds

        def loop(i: int) -> None:
            while time.monotonic() < deadline:
                calls[i] += 1
                try:
                    stub.Score(request, timeout=10)
                except grpc.RpcError as error:
                    failures.append(f"{error.code().name}: {error.details()}")

        threads = [threading.Thread(target=loop, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    total = sum(calls)
    print(
        f"python ageing: {total} calls without pause over {args.seconds:.0f} s: "
        f"{len(failures)} failed"
    )
    for failure in failures[:10]:
        print(f"  {failure}")
    return 1 if failures or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
