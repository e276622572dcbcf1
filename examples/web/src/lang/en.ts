// English: the page's words, and the keys every other language must have (`Words`:
// a language missing a key, or with another key's type, fails the type check). A
// string with parameters is a function; `you` says that the subject is the player at
// this page (languages that conjugate for it, as Romanian and Serbian do, use it).
import { Code } from "@connectrpc/connect";
import { ErrorReason } from "../gen/allfives/v1/allfives_pb.js";
import { list, num, plural } from "./util.js";

const L = "en";
const n = (x: number) => num(L, x);

export const en = {
  /** The language's name in itself, for the switch. */
  languageName: "English",
  language: "Language",

  // --- The page's frame (static/index.html). ---
  appTitle: "All Fives",
  newMatchButton: "New match",
  sound: "Sound",
  server: (url: string) => `server ${url}`,
  newMatchTitle: "A new match",
  yourName: "Your name",
  namePlaceholder: "shown to the table",
  tableLegend: "Table",
  players: "Players",
  partnership: "Partnerships (4 players: seats 1 and 3 against 2 and 4)",
  opponentsLegend: "Opponents: the server's bots, or friends you invite",
  rulesLegend: "Rules",
  handSize: "Hand size",
  handSizeStandard: "Standard: 9 each with 2 players, 7 with 3, 5 with 4",
  handSizeFive: "5 each, whatever the number of players",
  handSizeSeven: "7 each with 2 players, 5 with 3 or 4",
  target: "Target",
  targetNote: "(0: the default, 250 with 2 players, 200 with 3 or 4)",
  settlement: "Settlement",
  settlementOwn: "Own pips off your score, rounded",
  settlementWinner: "Winner takes the others' pips, rounded",
  startMatch: "Start the match",
  backToMatch: "Back to the match",
  codeJoinTitle: "Join with a code",
  codeField: "The code a friend read out",
  join: "Join",
  invitedTitle: "You are invited to a match",
  tableTitle: "The table",
  draw: "Draw",
  suggest: "Suggest",
  hintLevel: "hint level",
  dealNext: "Deal the next hand",
  rematch: "Rematch",
  logTitle: "What happened",
  watchSummary: "Let someone watch",
  watchLinkLabel: "Link to watch this match",
  watchNote: "Whoever opens it sees the table as a spectator: no hand, nothing to play (a server with a match store).",
  sheetSummary: "Score sheet",

  // --- Tiles, seats, ends. ---
  /** The pips' names, 0 to 6. */
  pips: ["blank", "one", "two", "three", "four", "five", "six"],
  /** A tile, the higher half first: "five-three". */
  tile: (hi: string, lo: string) => `${hi}-${lo}`,
  double: (pip: string) => `double ${pip}`,
  levels: ["easy", "medium", "hard"],
  /** A bot of a level: "easy bot". */
  bot: (level: string) => `${level} bot`,
  you: "You",
  seat: (number: number) => `Seat ${n(number)}`,
  /** A name that needs its seat beside it. */
  nameAndSeat: (name: string, number: number) => `${name} (Seat ${n(number)})`,
  partner: "partner",
  open: "open",
  /** The ends, by End: the centre (before the lead), left, right, up, down. */
  ends: ["the centre (the lead)", "the left end", "the right end", "the upper arm", "the lower arm"],
  /** Where a move went, by End, as the log says it. */
  onEnds: ["as the lead", "on the left end", "on the right end", "on the upper arm", "on the lower arm"],
  /** The arms of the line, by Arm: left, right, up, down. */
  arms: ["the left arm", "the right arm", "the upper arm", "the lower arm"],
  /** Points called as players call them, 5 to 95 by fives. */
  fives: [
    "five", "ten", "fifteen", "twenty", "twenty-five", "thirty", "thirty-five", "forty", "forty-five", "fifty",
    "fifty-five", "sixty", "sixty-five", "seventy", "seventy-five", "eighty", "eighty-five", "ninety", "ninety-five",
  ],

  // --- The table (src/table.ts). ---
  tiles: (count: number) => plural(L, count, { one: "# tile", other: "# tiles" }),
  onTurnMark: "on turn",
  placeLead: "the lead",
  /** "the left arm, 2nd from the lead" (from the spinner on the upper and lower arms). */
  placeOnArm: (arm: string, nth: number, fromSpinner: boolean) => {
    const th = nth % 10 === 1 && nth % 100 !== 11 ? "st" : nth % 10 === 2 && nth % 100 !== 12 ? "nd" : nth % 10 === 3 && nth % 100 !== 13 ? "rd" : "th";
    return `${arm}, ${n(nth)}${th} from the ${fromSpinner ? "spinner" : "lead"}`;
  },
  placed: (tile: string, spinner: boolean, place: string, who: string, you: boolean, last: boolean) =>
    `${tile}${spinner ? ", the spinner" : ""}, on ${place}, played by ${who}${last ? ", the last played" : ""}`,
  openEnd: (end: string, pip: string, value: number) => `${end}: ${pip} (counts ${n(value)})`,
  centreEmpty: "the centre: empty, the lead is any tile",
  placeOn: (tile: string, end: string, points: number) =>
    `Place ${tile} on ${end}: ${plural(L, points, { one: "# point", other: "# points" })}`,
  lineOfPlay: (count: number) => `The line of play: ${plural(L, count, { one: "# tile", other: "# tiles" })}`,
  openEnds: (count: number) => `Open ends: ${n(count)}`,
  openEndsCount: (count: number, sum: number) => `Open ends: ${n(count)}, count ${n(sum)}`,
  count: (sum: number) => `Count ${n(sum)}`,
  boneyard: (size: number) => `Boneyard ${n(size)}`,
  hand: (hand: number) => `Hand ${n(hand)}`,
  targetIs: (target: number) => `target ${n(target)}`,
  winMatchYou: "You win the match!",
  winMatchYouPartner: "You and your partner win the match!",
  winMatch: (names: string, count: number) => `${names} win${count > 1 ? "" : "s"} the match`,
  handIsOverMoment: (hand: number) => `Hand ${n(hand)} is over`,
  watchingNoHand: "Watching: no hand is yours",
  captionDraw: "nothing to play: draw",
  captionEnd: "now choose an end",
  captionTile: "your turn: choose a tile",
  yourHand: (count: number) => `Your hand: ${plural(L, count, { one: "# tile", other: "# tiles" })}`,
  playable: "playable",
  scoresUpTo: (points: number) => `scores up to ${n(points)}`,
  cannotPlayNow: "cannot be played now",
  suggestedMark: "suggested",

  // --- What happened (the log), and how a hand ends. ---
  logDealt: (hand: number, who: string, you: boolean) => `Hand ${n(hand)} dealt; ${who} ${you ? "lead" : "leads"}.`,
  logPlayed: (who: string, you: boolean, tile: string, where: string, count: number, points: number) =>
    `${who} played ${tile} ${where}: count ${n(count)}${points ? `, scoring ${n(points)}` : ""}.`,
  logDrew: (who: string, you: boolean, tile: string) => `${who} drew ${tile}.`,
  logDrewHidden: (who: string, you: boolean) => `${who} drew a tile.`,
  logPassed: (who: string, you: boolean) => `${who} passed.`,
  logHandEnded: (hand: number, how: string) => `Hand ${n(hand)} ended: ${how}`,
  logMatchOver: (names: string, count: number) => `The match is over: ${names} won.`,
  wentOut: (who: string, you: boolean) => `${who} went out.`,
  blocked: "blocked: nobody could play.",
  reachedTarget: (who: string, you: boolean) => `${who} reached the target.`,

  // --- The status line, and the end of a hand. ---
  matchOver: (winners: string) => `The match is over: ${winners}`,
  waitingInvite: "Waiting for players: send the invite link below.",
  waitingDeal: "Waiting for the deal.",
  handIsOver: "The hand is over.",
  watchingTurn: (who: string, you: boolean) => `Watching: ${who} is on turn.`,
  onTurn: (who: string, you: boolean) => `${who} is on turn.`,
  mustDraw: "You have nothing to play: draw from the boneyard.",
  yourLead: "Your lead: choose any tile, then the centre.",
  chooseEnd: "Now choose an end (highlighted, with the points it scores).",
  chooseTile: "Your turn: choose a tile (playable ones are raised).",
  wonYou: "you won!",
  wonYouAnd: (partner: string) => `you and ${partner} won.`,
  won: (names: string, count: number) => `${names} won.`,
  waitingTitle: "Waiting for players",
  openSeatsWatching: (seats: string) => `Open: ${seats}. The first hand is dealt once every seat is taken.`,
  openSeatsInvite: (seats: string) =>
    `Open: ${seats}. Send a friend this link (or open it in another window); the first hand is dealt once every seat is taken.`,
  inviteLink: "Invite link",
  copy: "Copy",
  linkCopied: "Invite link copied.",
  codeIntro: "Or read out this code; your friend chooses “Join with a code” on the page:",
  codeLabel: (spelled: string) => `Invite code: ${spelled}`,
  codeLasts: (minutes: number) => `The code works for ${plural(L, minutes, { one: "# minute", other: "# minutes" })}, until every seat is taken.`,
  noCodes: "Codes need a server with a match store: send the link.",
  codeCopied: "Invite code copied.",
  readyFirstHand: "Ready to deal the first hand",
  handTitle: (hand: number, how: string) => `Hand ${n(hand)}: ${how}`,
  noTiles: "no tiles",
  pipsCounting: (pips: number, counted: number) => `${plural(L, pips, { one: "# pip", other: "# pips" })}, counting ${n(counted)}`,
  notSettled: "A placement reached the target, so the hand was not settled.",
  forfeitNotSettled: "The match was forfeited, so the hand was not settled.",
  forfeitHandsHidden: "The tiles left in hand were not shown.",
  settled: (sides: string) => `Settlement: ${sides}.`,
  sheetCaption: (target: number) => `Score sheet, target ${n(target)}`,
  sheetHand: "hand",
  sheetNote: "Each cell: the running total, then the hand's points from play + settlement.",

  // --- The new-match form, hints, questions. ---
  friendOption: "a friend (invite link)",
  hereOption: "a player at this screen",
  waitYourTurn: (who: string, you: boolean) => `Wait for your turn: ${who} is on turn.`,
  fitsNoEnd: (tile: string, pips: string[], mustDraw: boolean) =>
    `The ${tile} fits no open end (they show ${list(L, pips)})${mustDraw ? ": draw from the boneyard" : ""}.`,
  botSaysDraw: (level: string) => `The ${level} bot says: draw.`,
  botSuggests: (level: string, tile: string, where: string, points: number) =>
    `The ${level} bot suggests ${tile} ${where} (${plural(L, points, { one: "# point", other: "# points" })}).`,
  confirmNewMatch: "Start a new match? The match in progress is left where it stands.",
  confirmLeave: "Leave the match this page holds, to join the one you were invited to?",
  everySeatTaken: "Every seat of this match has been taken.",
  noStore:
    "This server keeps no match store, so the other players' moves cannot reach this page. Start it with --match-store memory.",
  handoverText: (who: string) => `${who}'s turn: pass the device, then show the tiles.`,
  handoverButton: (who: string) => `I am ${who}: show my tiles`,

  // --- Turn clocks (issue 41): the option, each seat's clock, absence. ---
  clockOption: "Clock: 30 s a move, 60 s in the bank; a bot moves for a player whose time runs out",
  clocksLabel: "Clocks",
  clockOnTurn: (who: string, you: boolean, time: string) => `${who}, on turn: ${time} left`,
  clockBank: (who: string, you: boolean, time: string) => `${who}: ${time} in the bank`,
  /** Said once on the player's own turn, as its time falls to 10 s (the status line). */
  timeLow: (time: string) => `Only ${time} left.`,
  botPlaysFor: (who: string, you: boolean) => (you ? "A bot is playing for you." : `A bot is playing for ${who}.`),
  // Presence: a seat with no device watching the match (advice: its clock decides).
  goneLabel: "Players gone",
  goneFor: (who: string, time: string) => `${who} has been gone for ${time}.`,
  duration: {
    seconds: (count: number) => plural(L, count, { one: "# second", other: "# seconds" }),
    minutes: (count: number) => plural(L, count, { one: "# minute", other: "# minutes" }),
    hours: (count: number) => plural(L, count, { one: "# hour", other: "# hours" }),
    days: (count: number) => plural(L, count, { one: "# day", other: "# days" }),
  },
  // The page's Watch stream cannot reach the server (it keeps trying, with backoff).
  reconnecting: "The connection to the server was lost. Trying again…",
  leave: "Leave",
  confirmLeaveSeat: "Leave the match? A bot plays your seat until you take it back.",
  confirmLeaveForfeit: "Leave? Your side forfeits the match.",
  returnToSeat: "Take my seat back",
  logTimedOut: (who: string, you: boolean) => `${who} ran out of time.`,
  logLeft: (who: string, you: boolean) => `${who} left the table.`,
  logBotTookSeat: (who: string, you: boolean, bot: string) => `From now on the ${bot} plays for ${you ? "you" : who}.`,
  logReturned: (who: string, you: boolean) => `${who} ${you ? "are" : "is"} back at the table.`,
  logForfeitedTimedOut: (who: string, you: boolean) => `${who} ran out of time and forfeited the match.`,
  logForfeitedLeft: (who: string, you: boolean) => `${who} left and forfeited the match.`,
  forfeitEnd: (who: string, you: boolean) => `${who} forfeited.`,
  // How each human seat finished, at the end of a match with a clock or an absence.
  seatsEnded: "How each player finished",
  endedPlayedOut: (who: string, you: boolean) => `${who}: played to the end`,
  endedTimedOut: (who: string, you: boolean) => `${who}: ran out of time`,
  endedLeft: (who: string, you: boolean) => `${who}: left the table`,

  // --- Refusals: one sentence for every ErrorReason of the proto. ---
  refusals: {
    [ErrorReason.ERROR_REASON_UNSPECIFIED]: "The server refused the request.",
    [ErrorReason.INVALID_FIELD]: "The server could not accept a value this page sent.",
    [ErrorReason.TOKEN_MALFORMED]: "The saved match could not be read: it is not a game state. Start a new match.",
    [ErrorReason.TOKEN_UNKNOWN_KEY]:
      "The saved match was sealed with a key this server does not hold (it may have restarted since). Start a new match.",
    [ErrorReason.TOKEN_UNSUPPORTED_VERSION]:
      "The saved match comes from another version of the server and cannot go on here. Start a new match.",
    [ErrorReason.TOKEN_INVALID]: "The saved match has been altered, or was not issued by this server. Start a new match.",
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
    [ErrorReason.CREDENTIAL_INVALID]: "The seat key saved in this browser does not belong to this match. Start a new match.",
    [ErrorReason.SEAT_IS_BOT]: "That seat is played by the server's bot.",
    [ErrorReason.SEED_NOT_ALLOWED]: "This server chooses every shuffle itself.",
    [ErrorReason.SEATS_OPEN]: "A seat at the table is still waiting for its player.",
    [ErrorReason.SEAT_TAKEN]: "That seat has already been taken.",
    [ErrorReason.MALFORMED_REQUEST]: "The server could not read what this page sent.",
    [ErrorReason.OVERLOADED]: "The server is busy. Try again in a moment.",
    [ErrorReason.SEARCH_QUEUE_FULL]: "The server is busy with hard searches. Try again in a moment, or ask for an easier hint.",
    [ErrorReason.REQUEST_BODY_TIMEOUT]: "The request took too long to reach the server. Try again.",
    [ErrorReason.STATE_STALE]: "The match moved on (another device or tab played first): the table now shows it as it is.",
    [ErrorReason.STORE_UNAVAILABLE]: "The server cannot reach its match records right now. Try again in a moment.",
    [ErrorReason.MATCH_FORGOTTEN]: "The server no longer keeps this match. Start a new one.",
    [ErrorReason.STORE_REQUIRED]: "This server cannot continue this match. Try again later.",
    [ErrorReason.TOO_MANY_WATCHES]: "Too many matches are being followed from here. Close one and try again.",
    [ErrorReason.INVITE_NOT_FOUND]:
      "No match is waiting under that code. Check it with your friend: it may have expired, or every seat may be taken.",
    [ErrorReason.INVITE_RATE_LIMITED]:
      "Too many wrong codes were tried on this server just now. Wait a minute and try again, or ask for the invite link.",
    [ErrorReason.NO_OPEN_SEAT]: "Every seat of this match is taken: nobody else can join it.",
    [ErrorReason.REQUEST_TIMEOUT]: "The server took too long to answer. Try again.",
    [ErrorReason.TIMEOUT_NOT_DUE]: "The player on turn still has time.",
    [ErrorReason.NO_TURN_CLOCK]: "This match has no clock.",
    [ErrorReason.TURN_TIMED_OUT]: "Your time ran out before your move arrived.",
    [ErrorReason.SEAT_NOT_HELD]: "You are already playing that seat.",
    [ErrorReason.CLOCK_SKEW]: "The server's clock is off just now. Try again.",
    [ErrorReason.PASS_MALFORMED]: "This page sent a sign-in the server could not read.",
    [ErrorReason.PASS_INVALID]: "Your sign-in could not be checked. Sign in again.",
    [ErrorReason.PASS_EXPIRED]: "Your sign-in has expired. Sign in again.",
    [ErrorReason.PASS_NOT_YET_VALID]: "Your sign-in is not valid yet. Try again in a moment.",
    [ErrorReason.PASS_REQUIRED]: "This game seats only signed-in players.",
    [ErrorReason.PASSES_NOT_ACCEPTED]: "This server does not take sign-ins.",
    [ErrorReason.PLAYER_ALREADY_SEATED]: "You already have a seat at this table.",
  } satisfies Record<ErrorReason, string>,
  /** A bad field's sentence, by the BadRequest's field. */
  fields: {
    "rules.target": "The target must be a positive multiple of 5, at most 10000.",
    "rules.players": "A match has 2, 3 or 4 players.",
    "rules.partnership": "Partnerships need 4 players.",
    code: "That is not an invite code: a code is 12 letters and digits, like K7QM-4XPR-2D9F.",
  },
  /** By status code, for a refusal without a reason this page knows. */
  codes: {
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
  } satisfies Record<Code, string>,
  unknownRefusal: "The server refused the request for a reason this page does not know.",
  httpError: (status: number) => `The server (or a proxy in front of it) answered with an error (HTTP ${status}). Try again in a moment.`,
  unreachable: (server: string) => `The game server at ${server} cannot be reached. Is it running (cargo run --release)?`,
  connectionLost: (server: string) => `The connection to the game server at ${server} was lost before it answered. Try again.`,
  originRefused: (server: string, origin: string) =>
    `The game server at ${server} is running but does not allow pages from ${origin} to call it. ` +
    `Start it with --cors-origins ${origin} (or without --cors-origins, which allows every origin).`,
  // The page on a real network (issue 42): the connection, a match gone, the invite shared, the turn told, how to play.
  statusOffline: "No connection to the server: your moves wait until it is back.",
  reconnected: "Connected again.",
  matchGone: "This match is no longer on the server (it was started again, or forgot the match). Start a new match below.",
  share: "Share",
  shareText: "Join my All Fives match",
  qrLabel: "The invite link as a QR code",
  qrCaption: "Or scan this code with the other phone's camera.",
  titleYourTurn: "Your turn",
  notifyTurn: "Tell me when it is my turn",
  notifyDenied: "This browser will not show notifications here; the tab's title still says when it is your turn.",
  howToTitle: "How to play",
  howToCount: "The count: after every tile, add up the open ends of the line: an end counts the pips of its free half, a double lying across an end both its halves ([4|4] counts 8), and a lone first tile all its pips ([5|5] counts 10, not 20). When the count is a multiple of five (5, 10, 15…), whoever placed the tile scores that many points at once.",
  howToSpinner: "The spinner: the first double of a hand. It lies crosswise and counts its pips once while one of its sides is free; once both its sides are joined it counts nothing and opens two more ends, up and down, each counting only once a tile is on it.",
  howToDraw: "Drawing and passing: with no tile that fits, you draw from the boneyard until one fits, and play it; when the boneyard is empty, you pass.",
  howToEnd: "The end of a hand: a player places their last tile (domino), or nobody can play (blocked); every hand is then shown. The first to reach the target wins the match at once: reached by placing a tile (even a player's last), that hand is neither played out nor settled. A forfeit ends the match at once too, the hands left face down.",
  howToSettle: "Settlement: by default, the pips left in each player's hand, rounded to five, come off their own score (in a partnership, off the team's). Under the other rule, whoever went out (domino) scores the pips of each opponent's hand, each rounded on its own (a partner's are not counted); in a blocked hand, whoever holds the fewest pips, unrounded (a team adds both partners'), takes them the same way, and on a tie nobody does.",
  moveLost: "That did not reach the server: the connection was lost. Try again once it is back.",
  rematchOffered: (who: string) => `${who} offers a rematch: the same table again.`,
  acceptRematch: "Accept the rematch",
};

/** What every language defines: English's keys, each with English's type. */
export type Words = typeof en;
