// Waits (at most SECONDS, default 10) until the allfives server at URL answers the
// gRPC health check SERVING over gRPC-Web, the protocol the page speaks: `node
// scripts/wait-healthy.mjs http://127.0.0.1:50051 [SECONDS]`. Exits 1 if it does not.
const [url, seconds = "10"] = process.argv.slice(2);
const deadline = Date.now() + Number(seconds) * 1000;
// An empty HealthCheckRequest (service ""), framed: flag 0, length 0.
const body = new Uint8Array(5);
// HealthCheckResponse{status: SERVING} is field 1 = 1: bytes 08 01.
const serving = (bytes) => {
  for (let at = 0; at + 5 <= bytes.length; ) {
    const flag = bytes[at];
    const length = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    const message = bytes.subarray(at + 5, at + 5 + length);
    if (flag === 0 && message.length === 2 && message[0] === 8 && message[1] === 1) return true;
    at += 5 + length;
  }
  return false;
};
let last = "no answer";
while (Date.now() < deadline) {
  try {
    const res = await fetch(`${url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
      body,
      signal: AbortSignal.timeout(3000),
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (res.ok && serving(bytes)) process.exit(0);
    last = `HTTP ${res.status}`;
  } catch (err) {
    last = String(err?.cause?.code ?? err);
  }
  await new Promise((r) => setTimeout(r, 100));
}
console.error(`${url} is not SERVING after ${seconds} s (${last})`);
process.exit(1);
