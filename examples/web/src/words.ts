// What the page says: tile and seat names for people and screen readers, and a plain
// sentence for every refusal (keyed by the generated ErrorReason enum, so a reason
// added to the proto fails the type check until it has its sentence).
import { Code, ConnectError } from "@connectrpc/connect";
import { BotLevel, End, ErrorReason } from "./gen/allfives/v1/allfives_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

const PIPS = ["blank", "one", "two", "three", "four", "five", "six"];

/** "five-three", "double six", "six-blank": the higher half first. */
export function tileName(tile: { a: number; b: number }): string {
  const hi = Math.max(tile.a, tile.b);
  const lo = Math.min(tile.a, tile.b);
  return hi === lo ? `double ${PIPS[hi]}` : `${PIPS[hi]}-${PIPS[lo]}`;
}

export function levelName(level: BotLevel): string {
  return { [BotLevel.EASY]: "easy", [BotLevel.MEDIUM]: "medium", [BotLevel.HARD]: "hard" }[level as 1 | 2 | 3] ?? "";
}

/** Seat 0 is the player at this page; the others are the server's bots. */
/** The seats' display names (GameView.seats), as the page last drew them. */
let displayNames: string[] = [];
export function setNames(view: { seats: { displayName: string }[] }) {
  displayNames = view.seats.map((s) => s.displayName);
}

const RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFC]/;

/**
 * "You", a seat's display name, or "Seat 2" for a seat without one. Text: escape it for
 * markup. A name that could pass for one of the page's own labels ("You", "Seat 3") or
 * that another seat also has carries its seat's number; a right-to-left name is
 * isolated (U+2068 … U+2069, which no name may hold) so it does not reorder the text
 * around it.
 */
export function seatName(seat: number, you: number): string {
  if (seat === you) return "You";
  const name = displayNames[seat];
  if (!name) return `Seat ${seat + 1}`;
  const folded = name.toLowerCase();
  const label = folded === "you" || /^seat\s*\d+$/.test(folded);
  const shared = displayNames.some((other, s) => s !== seat && other.toLowerCase() === folded);
  const shown = RTL.test(name) ? `\u2068${name}\u2069` : name;
  return label || shared ? `${shown} (Seat ${seat + 1})` : shown;
}

export function endName(end: End): string {
  switch (end) {
    case End.LEFT:
      return "the left end";
    case End.RIGHT:
      return "the right end";
    case End.UP:
      return "the upper arm";
    case End.DOWN:
      return "the lower arm";
    default:
      return "the centre (the lead)";
  }
}

// Apart from each other and from the page's own marks: amber (#f5b400) for what can be
// played, blue (#50c8ff) for advice, white for the chosen tile, magenta for the focus.
/**
 * The seats' colours, from Okabe and Ito's palette for the common colour-vision
 * deficiencies (sky blue, orange, bluish green, reddish purple), each seat also with a
 * shape of its own (`SEAT_SHAPES`), so colour is never the only sign.
 */
export const SEAT_COLOURS = ["#56b4e9", "#e69f00", "#009e73", "#cc79a7"];
export const SEAT_SHAPES = ["circle", "square", "triangle", "diamond"] as const;

/** A seat's mark: its shape in its colour, centred on (cx, cy), `r` its half-size. */
export function seatMark(seat: number, cx: number, cy: number, r: number, cls = ""): string {
  const style = `fill:${SEAT_COLOURS[seat] ?? "#fff"}`;
  const c = cls ? ` class="${cls}"` : "";
  switch (SEAT_SHAPES[seat]) {
    case "square":
      return `<rect x="${cx - r * 0.85}" y="${cy - r * 0.85}" width="${r * 1.7}" height="${r * 1.7}" style="${style}"${c} aria-hidden="true"/>`;
    case "triangle":
      return `<polygon points="${cx},${cy - r} ${cx + r},${cy + r * 0.8} ${cx - r},${cy + r * 0.8}" style="${style}"${c} aria-hidden="true"/>`;
    case "diamond":
      return `<polygon points="${cx},${cy - r} ${cx + r},${cy} ${cx},${cy + r} ${cx - r},${cy}" style="${style}"${c} aria-hidden="true"/>`;
    default:
      return `<circle cx="${cx}" cy="${cy}" r="${r}" style="${style}"${c} aria-hidden="true"/>`;
  }
}

const TENS = ["", "ten", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];
/** Points as a player calls them: "fifteen", "twenty-five"; digits past ninety-five. */
export function pointsWord(points: number): string {
  if (points <= 0 || points % 5 !== 0 || points >= 100) return String(points);
  if (points === 5) return "five";
  if (points === 15) return "fifteen";
  const tens = TENS[Math.floor(points / 10)];
  return points % 10 === 5 ? `${tens}-five` : tens;
}

/** A hand's points from play and from the settlement: "40 + 10", "40 − 10". */
export function playAndSettlement(play: number, settlement: number): string {
  return `${play} ${settlement < 0 ? "−" : "+"} ${Math.abs(settlement)}`;
}

const SENTENCES: Record<ErrorReason, string> = {
  [ErrorReason.ERROR_REASON_UNSPECIFIED]: "The server refused the request.",
  [ErrorReason.INVALID_FIELD]: "The server could not accept a value this page sent.",
  [ErrorReason.TOKEN_MALFORMED]: "The saved match could not be read: it is not a game state. Start a new match.",
  [ErrorReason.TOKEN_UNKNOWN_KEY]:
    "The saved match was sealed with a key this server does not hold (it may have restarted since). Start a new match.",
  [ErrorReason.TOKEN_UNSUPPORTED_VERSION]:
    "The saved match comes from another version of the server and cannot go on here. Start a new match.",
  [ErrorReason.TOKEN_INVALID]:
    "The saved match has been altered, or was not issued by this server. Start a new match.",
  [ErrorReason.RANDOM_UNAVAILABLE]: "The server could not shuffle just now. Try again in a moment.",
  [ErrorReason.NOT_YOUR_TURN]: "It is not your turn.",
  [ErrorReason.TILE_NOT_IN_HAND]: "You do not hold that tile.",
  [ErrorReason.TILE_DOES_NOT_MATCH]: "That tile does not fit there.",
  [ErrorReason.END_NOT_OPEN]: "That end of the table is not open.",
  [ErrorReason.MUST_PLAY]: "You hold a tile you can play, so you cannot draw.",
  [ErrorReason.AMBIGUOUS_END]: "That tile fits more than one end: choose where to place it.",
  [ErrorReason.WRONG_PHASE]: "That cannot be done now: wait for the next hand to be dealt, or for this one to end.",
  [ErrorReason.GAME_OVER]: "The match is over. Start a new one.",
  [ErrorReason.BONEYARD_EMPTY]: "The boneyard is empty: there is nothing left to draw.",
  [ErrorReason.CREDENTIAL_REQUIRED]: "The server wants this seat's key, and this page does not have it.",
  [ErrorReason.CREDENTIAL_INVALID]:
    "The seat key saved in this browser does not belong to this match. Start a new match.",
  [ErrorReason.SEAT_IS_BOT]: "That seat is played by the server's bot.",
  [ErrorReason.SEED_NOT_ALLOWED]: "This server chooses every shuffle itself.",
  [ErrorReason.SEATS_OPEN]: "A seat at the table is still waiting for its player.",
  [ErrorReason.SEAT_TAKEN]: "That seat has already been taken.",
  [ErrorReason.MALFORMED_REQUEST]: "The server could not read what this page sent.",
  [ErrorReason.OVERLOADED]: "The server is busy. Try again in a moment.",
  [ErrorReason.SEARCH_QUEUE_FULL]:
    "The server is busy with hard searches. Try again in a moment, or ask for an easier hint.",
  [ErrorReason.REQUEST_BODY_TIMEOUT]: "The request took too long to reach the server. Try again.",
  [ErrorReason.STATE_STALE]: "The match moved on (another device or tab played first): the table now shows it as it is.",
  [ErrorReason.STORE_UNAVAILABLE]: "The server cannot reach its match records right now. Try again in a moment.",
  [ErrorReason.MATCH_FORGOTTEN]: "The server no longer keeps this match. Start a new one.",
  [ErrorReason.STORE_REQUIRED]: "This server cannot continue this match. Try again later.",
  [ErrorReason.TOO_MANY_WATCHES]: "Too many matches are being followed from here. Close one and try again.",
  [ErrorReason.INVITE_NOT_FOUND]: "No match is waiting under that code: it may have expired, or its seats are taken.",
  [ErrorReason.INVITE_RATE_LIMITED]: "Too many codes were tried just now. Wait a minute and try again.",
  [ErrorReason.NO_OPEN_SEAT]: "Every seat of this match is taken: there is no one left to invite.",
};

const FIELDS: Record<string, string> = {
  "rules.target": "The target must be a positive multiple of 5, at most 10000.",
  "rules.players": "A match has 2, 3 or 4 players.",
  "rules.partnership": "Partnerships need 4 players.",
};

/**
 * The reason from the error's ErrorInfo, if it has one this page knows. A reason added
 * to the proto after this page was built is undefined here: the proto says to treat an
 * unknown reason by its status code, which `sentenceFor` does.
 */
export function reasonOf(err: unknown): ErrorReason | undefined {
  const info = ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
  if (!info || !(info.reason in ErrorReason) || /^\d+$/.test(info.reason)) return undefined;
  return ErrorReason[info.reason as keyof typeof ErrorReason];
}

/** Whether the error is a refusal of the token or the seat key the page holds. */
export function refusesSaved(err: unknown): boolean {
  const reason = reasonOf(err);
  return (
    reason === ErrorReason.TOKEN_MALFORMED ||
    reason === ErrorReason.TOKEN_UNKNOWN_KEY ||
    reason === ErrorReason.TOKEN_UNSUPPORTED_VERSION ||
    reason === ErrorReason.TOKEN_INVALID ||
    reason === ErrorReason.CREDENTIAL_INVALID
  );
}

/**
 * Whether the browser gave no response at all: fetch failed with a TypeError (a server
 * that is down, a dropped connection, or a response the browser refused under CORS).
 * connect-web turns it into a ConnectError of code Unknown whose cause is the TypeError
 * ("Failed to fetch" in chromium). An HTTP error status is not this: it has an answer.
 */
export function isNetworkFailure(err: unknown): boolean {
  const e = ConnectError.from(err);
  return reasonOf(e) === undefined && e.cause instanceof TypeError;
}

/** The HTTP status when the answer was an HTTP error without a gRPC status ("HTTP 503"). */
function httpStatusOf(e: ConnectError): number | undefined {
  const m = /^HTTP (\d{3})$/.exec(e.rawMessage);
  return m ? Number(m[1]) : undefined;
}

/**
 * A plain sentence for a failed call: from the ErrorInfo's reason when there is one
 * this page knows (with the BadRequest's field for bad rule options), else from the
 * status code. `reach` says why the browser got no response at all (see
 * `whyUnreachable`; only for `isNetworkFailure`).
 */
export function sentenceFor(err: unknown, reach?: string): string {
  const e = ConnectError.from(err);
  const reason = reasonOf(e);
  if (reason === ErrorReason.INVALID_FIELD) {
    const field = e.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => v.field))[0];
    return (field && FIELDS[field]) ?? SENTENCES[reason];
  }
  if (reason !== undefined) return SENTENCES[reason];
  if (reach !== undefined && isNetworkFailure(e)) return reach;
  const http = httpStatusOf(e);
  if (http !== undefined) {
    return `The server (or a proxy in front of it) answered with an error (HTTP ${http}). Try again in a moment.`;
  }
  return CODES[e.code] ?? "The server refused the request for a reason this page does not know.";
}

/** Sentences by status code, for a refusal without an ErrorInfo reason this page knows. */
const CODES: Partial<Record<Code, string>> = {
  [Code.Canceled]: "The request was cancelled before the server answered. Try again.",
  [Code.Unknown]: "Something went wrong talking to the server. Try again.",
  [Code.InvalidArgument]: "The server could not accept what this page sent.",
  [Code.DeadlineExceeded]: "The server took too long to answer. Try again.",
  [Code.NotFound]: "The server does not know what this page asked for.",
  [Code.AlreadyExists]: "That has already been done.",
  [Code.PermissionDenied]: "The server does not allow this page to do that.",
  [Code.ResourceExhausted]: "The server is busy. Try again shortly.",
  [Code.FailedPrecondition]: "That cannot be done in the match as it stands now.",
  [Code.Aborted]: "The server gave up on the request. Try again.",
  [Code.OutOfRange]: "The server could not accept a value this page sent.",
  [Code.Unimplemented]: "This server does not offer what this page asked for: it may be another version.",
  [Code.Internal]: "The server failed while answering. Try again.",
  [Code.Unavailable]: "The server is not available just now. Try again in a moment.",
  [Code.DataLoss]: "The answer from the server was damaged. Try again.",
  [Code.Unauthenticated]: "The server wants a key this page does not have.",
};

/**
 * Why the browser got no response (`isNetworkFailure`). A no-cors request needs no
 * permission from the server: if it fails too, nothing answers there. If it reaches
 * the server, a plain cors request tells the two other causes apart: the browser
 * refuses it as well when the server does not let this page's origin call it (its
 * --cors-origins); if it is let through, the call's connection was lost on the way.
 */
export async function whyUnreachable(server: string): Promise<string> {
  const origin = window.location.origin;
  const probe = (mode: RequestMode) =>
    fetch(server, { mode, cache: "no-store", signal: AbortSignal.timeout(5000) }).then(
      () => true,
      () => false,
    );
  if (!(await probe("no-cors"))) {
    return `The game server at ${server} cannot be reached. Is it running (cargo run --release)?`;
  }
  if (await probe("cors")) {
    return `The connection to the game server at ${server} was lost before it answered. Try again.`;
  }
  return (
    `The game server at ${server} is running but does not allow pages from ${origin} to call it. ` +
    `Start it with --cors-origins ${origin} (or without --cors-origins, which allows every origin).`
  );
}
