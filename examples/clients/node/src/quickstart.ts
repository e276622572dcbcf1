// The web quick start (docs/quickstart/web.md quotes it): a whole match against the
// server's MEDIUM bot over gRPC-Web, the transport a browser uses (connect-web, over
// fetch), and one refusal read as a client should. The same code runs in a page
// (bundled with esbuild, as examples/web is); here Node's fetch runs it.
//
//   npm ci && npm run build
//   node dist/quickstart.js --addr 127.0.0.1:50051
//
// .ci/clients runs it against a real server; it exits 1 if the match does not end or
// the refusal is not the one expected.
import { parseArgs } from "node:util";

// [START quickstart_web_client]
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AllFivesService, BotLevel, Phase } from "./gen/allfives/v1/allfives_pb.js";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
// [END quickstart_web_client]

// [START quickstart_web_refusal]
/** The ErrorInfo reason of a refused call: a name of the proto's ErrorReason enum. */
function reasonOf(err: unknown): string {
  // Connect decodes the google.rpc.Status of the grpc-status-details-bin trailer.
  const [info] = ConnectError.from(err).findDetails(ErrorInfoSchema);
  return info?.reason ?? ""; // none: a transport failure (unavailable, deadline...)
}
// [END quickstart_web_refusal]

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { addr: { type: "string", default: "127.0.0.1:50051" } } });
  const baseUrl = `http://${values.addr}`;

  // [START quickstart_web_match]
  // In a page: the service's address (it serves gRPC-Web itself; list the page's
  // origin in its --cors-origins).
  const client = createClient(AllFivesService, createGrpcWebTransport({ baseUrl }));
  const opts = { timeoutMs: 5000 };

  // Seat 0 is yours, claimed in this call: its credential is in the answer. Seat 1 is
  // the server's bot, which moves inside your calls.
  const game = await client.newGame(
    { rules: { players: 2, target: 50 }, seats: [{ claim: true }, { bot: BotLevel.MEDIUM }], viewer: 0 },
    opts,
  );
  const me = game.credentials[0].credential; // keep it: it is the seat's only key
  let state = game.state;
  let view = game.view!;

  while (view.phase !== Phase.OVER) {
    const answer =
      view.phase === Phase.DEALING
        ? await client.deal({ state, viewer: 0, credential: me }, opts)
        : view.mustDraw
          ? await client.draw({ state, seat: 0, viewer: 0, credential: me }, opts)
          : await client.play(
              // The server lists every legal move with its points: take the first.
              { state, seat: 0, viewer: 0, credential: me, tile: view.legalMoves[0].tile, end: view.legalMoves[0].end },
              opts,
            );
    for (const event of answer.events) process.stdout.write(`${event.kind.case} `);
    state = answer.state;
    view = answer.view!;
  }
  console.log(`\nscores ${view.scores.map((s) => s.score).join(" - ")}`);
  // [END quickstart_web_match]

  // [START quickstart_web_refused_move]
  // A move for the bot's seat is refused, and changes nothing.
  try {
    await client.play({ state, seat: 1, credential: me, tile: { a: 6, b: 6 } }, opts);
  } catch (err) {
    console.log(`refused: ${ConnectError.from(err).code} ${reasonOf(err)}`); // 7 SEAT_IS_BOT
    return reasonOf(err) === "SEAT_IS_BOT" ? 0 : 1;
  }
  // [END quickstart_web_refused_move]
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
