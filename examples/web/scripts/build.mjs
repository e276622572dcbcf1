// Builds the page into dist/ with esbuild (src/main.ts bundled, static/ copied), or
// with --serve rebuilds it on every change and serves it (npm run dev), or with
// --tests bundles the Playwright tests into test-dist/ for `node --test`.
import { cpSync, mkdirSync, rmSync, watch } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = new Set(process.argv.slice(2));

if (args.has("--tests")) {
  rmSync(join(root, "test-dist"), { recursive: true, force: true });
  await esbuild.build({
    entryPoints: [join(root, "test/web.test.ts"), join(root, "test/line.test.ts"), join(root, "test/lang.test.ts"), join(root, "test/layout.test.ts")],
    outdir: join(root, "test-dist"),
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    logLevel: "warning",
  });
} else {
  rmSync(join(root, "dist"), { recursive: true, force: true });
  mkdirSync(join(root, "dist"));
  cpSync(join(root, "static"), join(root, "dist"), { recursive: true });
  const options = {
    entryPoints: [join(root, "src/main.ts")],
    outfile: join(root, "dist/app.js"),
    bundle: true,
    format: "esm",
    target: "es2022",
    sourcemap: true,
    minify: !args.has("--serve"),
    logLevel: "info",
  };
  if (args.has("--serve")) {
    const port = Number(process.env.PORT ?? 5173);
    const ctx = await esbuild.context(options);
    await ctx.watch();
    // static/ is copied again whenever a file in it changes.
    watch(join(root, "static"), () => cpSync(join(root, "static"), join(root, "dist"), { recursive: true }));
    // Loopback only, unless HOST names another address (HOST=0.0.0.0: every interface,
    // to open the page from a phone on the same network).
    const host = process.env.HOST ?? "127.0.0.1";
    await ctx.serve({ servedir: join(root, "dist"), host, port });
    console.log(`\n  The table: http://${host}:${port}/  (server: ?server=http://<the page's host>:50051 by default)\n`);
  } else {
    await esbuild.build(options);
  }
}
