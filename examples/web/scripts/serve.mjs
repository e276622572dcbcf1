// A static file server for the built page (dist/), for the tests: `node
// scripts/serve.mjs PORT...` serves dist/ on 127.0.0.1 on every port given, so one
// process gives the page two origins (one a server allows, one it does not). Port 0
// takes a free port from the system; each port's line says which it got, in the order
// given: "serving dist/ on http://127.0.0.1:PORT/ (N)".
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { dirname, extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".svg": "image/svg+xml",
};
const ports = process.argv.slice(2).map(Number);
if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p < 0)) {
  console.error("usage: node scripts/serve.mjs PORT...");
  process.exit(2);
}
for (const [n, port] of ports.entries()) {
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const file = normalize(join(dist, path.endsWith("/") ? path + "index.html" : path));
    if (!file.startsWith(dist)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { "content-type": types[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end("not found");
    }
  });
  server.listen(port, "127.0.0.1", () => console.log(`serving dist/ on http://127.0.0.1:${server.address().port}/ (${n + 1})`));
}
