// What the page says: tile and seat names for people and screen readers, and a plain
// sentence for every refusal (keyed by the generated ErrorReason enum in every
// language's dictionary, src/lang/, so a reason added to the proto fails the type
// check until each language has its sentence).
import { ConnectError } from "@connectrpc/connect";
import { BotLevel, End, ErrorReason } from "./gen/allfives/v1/allfives_pb.js";
import { BadRequestSchema, ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";
import { T } from "./lang/index.js";

/** "five-three", "double six", "six-blank": the higher half first. */
export function tileName(tile: { a: number; b: number }): string {
  const hi = Math.max(tile.a, tile.b);
  const lo = Math.min(tile.a, tile.b);
  return hi === lo ? T.double(T.pips[hi]) : T.tile(T.pips[hi], T.pips[lo]);
}

/** A pip's name ("five"), as an open end shows it. */
export const pipName = (pip: number) => T.pips[pip] ?? String(pip);

export function levelName(level: BotLevel): string {
  return level >= BotLevel.EASY && level <= BotLevel.HARD ? T.levels[level - 1] : "";
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
  if (seat === you) return T.you;
  const name = displayNames[seat];
  if (!name) return T.seat(seat + 1);
  const folded = name.toLowerCase();
  const label = looksLikeLabel(folded);
  const shared = displayNames.some((other, s) => s !== seat && other.toLowerCase() === folded);
  const shown = RTL.test(name) ? `\u2068${name}\u2069` : name;
  return label || shared ? T.nameAndSeat(shown, seat + 1) : shown;
}

/** Whether a name reads as the page's "You" or "Seat 3", in English or the page's language. */
function looksLikeLabel(folded: string): boolean {
  const seatWord = (seat: (n: number) => string) => {
    const escaped = seat(9).toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    return new RegExp(`^${escaped.replace("9", "\\d+").replace(/ /g, "\\s*")}$`);
  };
  return folded === "you" || folded === T.you.toLowerCase() || /^seat\s*\d+$/.test(folded) || seatWord(T.seat).test(folded);
}

/** "the left end": an end of the line, as a label says it. */
export function endName(end: End): string {
  return T.ends[end] ?? T.ends[End.UNSPECIFIED];
}

/** "on the left end", "as the lead": where a move goes, as a sentence says it. */
export function onEnd(end: End): string {
  return T.onEnds[end] ?? T.onEnds[End.UNSPECIFIED];
}

/** How long, in its largest whole unit ("40 seconds", "3 minutes", "5 hours", "2 days"):
 * hours up to two days, for a match played by correspondence. */
export function howLong(ms: number): string {
  const s = Math.floor(Math.max(0, ms) / 1000);
  if (s < 60) return T.duration.seconds(s);
  if (s < 3600) return T.duration.minutes(Math.floor(s / 60));
  if (s < 48 * 3600) return T.duration.hours(Math.floor(s / 3600));
  return T.duration.days(Math.floor(s / 86_400));
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

/** Points as a player calls them: "fifteen", "twenty-five"; digits past ninety-five. */
export function pointsWord(points: number): string {
  if (points <= 0 || points % 5 !== 0 || points >= 100) return String(points);
  return T.fives[points / 5 - 1];
}

/** A hand's points from play and from the settlement: "40 + 10", "40 − 10". */
export function playAndSettlement(play: number, settlement: number): string {
  return `${play} ${settlement < 0 ? "−" : "+"} ${Math.abs(settlement)}`;
}

/**
 * The reason from the error's ErrorInfo, if it has one this page knows. A reason added
 * to the proto after this page was built is undefined here: the proto says to treat an
 * unknown reason by its status code, which `sentenceFor` does.
 */
export function reasonOf(err: unknown): ErrorReason | undefined {
  const info = ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
  if (!info || info.domain !== "allfives.v1" || !Object.hasOwn(ErrorReason, info.reason) || /^\d+$/.test(info.reason)) {
    return undefined;
  }
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
    return (field && Object.hasOwn(T.fields, field) && T.fields[field as keyof typeof T.fields]) || T.refusals[reason];
  }
  if (reason !== undefined) return T.refusals[reason];
  if (reach !== undefined && isNetworkFailure(e)) return reach;
  const http = httpStatusOf(e);
  if (http !== undefined) return T.httpError(http);
  return (T.codes as Partial<Record<number, string>>)[e.code] ?? T.unknownRefusal;
}

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
  if (!(await probe("no-cors"))) return T.unreachable(server);
  if (await probe("cors")) return T.connectionLost(server);
  return T.originRefused(server, origin);
}
