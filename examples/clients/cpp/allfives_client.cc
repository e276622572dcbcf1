// Plays one whole match of All Fives against an allfives server, in C++ (gRPC C++).
//
// The client holds the credential of every human seat (hot seat: one screen, every
// player in turn), claimed in NewGame, and sends it with every request naming a seat
// or a viewer. With --bots the server plays chosen seats itself: their moves arrive as
// events of the human seats' calls. Every human seat takes, from the legal moves the
// server lists, the one scoring most (then the heaviest tile); a seat told to draw
// draws. The match runs NewGame, Deal, Play and Draw until the phase is PHASE_OVER,
// then Score prints the sheet.
//
// On the way it provokes refusals on purpose (a tile out of range, a tile the seat does
// not hold, a Draw while holding a playable tile, a wrong or missing credential, an
// altered token, a move out of turn, a look at a bot's hand, a Deal after the match)
// and checks each: the gRPC code, and the google.rpc.ErrorInfo (reason and domain) and
// google.rpc.BadRequest read from the status details (the grpc-status-details-bin
// trailer, a serialized google.rpc.Status). A player is shown the plain sentence for
// the reason, never a code. It also checks every answer against the API's promises
// (the token changes and stays within 640 bytes, previous_state_id is the last
// state_id, the move counter and the scores move by what the events say, 28 tiles,
// redacted draws, the sheet adds up) and exits 1 on anything unexpected.
//
//   make                                           # generates the code, builds
//   build/allfives_client --addr 127.0.0.1:50051 --players 2 --bots human,hard
//
// Exit status: 0 when the match finished and every check held, 1 otherwise, 2 for a
// bad command line.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "allfives/v1/allfives.grpc.pb.h"
#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace pb = allfives::v1;
using Clock = std::chrono::system_clock;

namespace {

constexpr char kDomain[] = "allfives.v1";
constexpr size_t kMaxTokenBytes = 640;  // the API's bound (512 without display names)
constexpr size_t kIdBytes = 16;    // state_id and credentials
constexpr int kMaxCalls = 100000;  // far more than any match takes: the loop is stuck

// The server's answer broke a promise of the API, or a call failed unexpectedly.
struct Inconsistency : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void Check(bool ok, const std::string& what) {
  if (!ok) throw Inconsistency(what);
}

// --- Errors ------------------------------------------------------------------------

// Every reason of the ErrorReason enum: the status code it comes with, and the plain
// sentence a player is shown. Keyed by the generated constants; ErrorInfo.reason is
// the value's name. main() refuses to start if the proto has a reason missing here.
struct ReasonText {
  grpc::StatusCode code;
  const char* sentence;
};
const std::map<pb::ErrorReason, ReasonText> kReasons = {
    {pb::INVALID_FIELD, {grpc::INVALID_ARGUMENT, "The app sent a move the server could not read."}},
    {pb::TOKEN_MALFORMED,
     {grpc::INVALID_ARGUMENT, "This saved match is damaged and cannot be opened."}},
    {pb::TOKEN_UNKNOWN_KEY,
     {grpc::INVALID_ARGUMENT, "This saved match has expired; start a new one."}},
    {pb::TOKEN_UNSUPPORTED_VERSION,
     {grpc::INVALID_ARGUMENT, "This saved match is from an older version and cannot go on."}},
    {pb::TOKEN_INVALID,
     {grpc::INVALID_ARGUMENT, "This saved match was altered and cannot be opened."}},
    {pb::RANDOM_UNAVAILABLE,
     {grpc::UNAVAILABLE, "The server could not shuffle just now; try again."}},
    {pb::NOT_YOUR_TURN, {grpc::FAILED_PRECONDITION, "It is not your turn."}},
    {pb::TILE_NOT_IN_HAND, {grpc::FAILED_PRECONDITION, "That tile is not in your hand."}},
    {pb::TILE_DOES_NOT_MATCH, {grpc::FAILED_PRECONDITION, "That tile does not fit there."}},
    {pb::END_NOT_OPEN, {grpc::FAILED_PRECONDITION, "That end of the table is not open."}},
    {pb::MUST_PLAY,
     {grpc::FAILED_PRECONDITION, "You have a tile that fits: play it instead of drawing."}},
    {pb::AMBIGUOUS_END,
     {grpc::FAILED_PRECONDITION, "That tile fits more than one end: choose one."}},
    {pb::WRONG_PHASE,
     {grpc::FAILED_PRECONDITION, "That cannot be done at this point of the hand."}},
    {pb::GAME_OVER, {grpc::FAILED_PRECONDITION, "The match is over."}},
    {pb::BONEYARD_EMPTY, {grpc::FAILED_PRECONDITION, "There is nothing left to draw."}},
    {pb::CREDENTIAL_REQUIRED, {grpc::PERMISSION_DENIED, "Sign in to your seat to do that."}},
    {pb::CREDENTIAL_INVALID, {grpc::PERMISSION_DENIED, "You are not signed in to that seat."}},
    {pb::SEAT_IS_BOT, {grpc::PERMISSION_DENIED, "That seat is played by the computer."}},
    {pb::SEED_NOT_ALLOWED,
     {grpc::PERMISSION_DENIED, "This server deals its own matches; replays are off."}},
    {pb::SEATS_OPEN, {grpc::FAILED_PRECONDITION, "Waiting for every player to take a seat."}},
    {pb::SEAT_TAKEN, {grpc::FAILED_PRECONDITION, "Somebody already took that seat."}},
    {pb::MALFORMED_REQUEST,
     {grpc::INVALID_ARGUMENT, "The app sent a request the server could not read."}},
    {pb::OVERLOADED, {grpc::RESOURCE_EXHAUSTED, "The server is busy; try again in a moment."}},
    {pb::SEARCH_QUEUE_FULL,
     {grpc::RESOURCE_EXHAUSTED, "The computer players are busy; try again in a moment."}},
    {pb::REQUEST_BODY_TIMEOUT, {grpc::CANCELLED, "The connection is too slow; try again."}},
    {pb::STATE_STALE, {grpc::ABORTED, "The match has moved on; continue from the latest move."}},
    {pb::STORE_UNAVAILABLE, {grpc::UNAVAILABLE, "The server cannot reach its records; try again."}},
    {pb::MATCH_FORGOTTEN,
     {grpc::NOT_FOUND, "The server no longer keeps this match; start another."}},
    {pb::STORE_REQUIRED,
     {grpc::FAILED_PRECONDITION, "This server cannot continue this match; try again later."}},
    {pb::TOO_MANY_WATCHES,
     {grpc::RESOURCE_EXHAUSTED, "Too many matches are being followed; try again in a moment."}},
    {pb::INVITE_NOT_FOUND,
     {grpc::NOT_FOUND, "No match is waiting under that code; check it or ask for a new one."}},
    {pb::INVITE_RATE_LIMITED,
     {grpc::RESOURCE_EXHAUSTED, "Too many codes were tried; wait a minute or use the link."}},
    {pb::NO_OPEN_SEAT, {grpc::FAILED_PRECONDITION, "Every seat is taken already."}},
    {pb::REQUEST_TIMEOUT,
     {grpc::DEADLINE_EXCEEDED, "The server took too long to answer; try again."}},
    {pb::TIMEOUT_NOT_DUE, {grpc::FAILED_PRECONDITION, "The player on turn still has time."}},
    {pb::NO_TURN_CLOCK, {grpc::FAILED_PRECONDITION, "This match has no clock."}},
    {pb::TURN_TIMED_OUT,
     {grpc::FAILED_PRECONDITION, "Your time ran out before the move arrived."}},
    {pb::SEAT_NOT_HELD, {grpc::FAILED_PRECONDITION, "You are already playing that seat."}},
    {pb::CLOCK_SKEW, {grpc::UNAVAILABLE, "The server's clock is off just now; try again."}},
    {pb::PASS_MALFORMED,
     {grpc::INVALID_ARGUMENT, "The app sent a sign-in the server could not read."}},
    {pb::PASS_INVALID, {grpc::UNAUTHENTICATED, "Your sign-in could not be checked; sign in again."}},
    {pb::PASS_EXPIRED, {grpc::UNAUTHENTICATED, "Your sign-in has expired; sign in again."}},
    {pb::PASS_NOT_YET_VALID,
     {grpc::UNAUTHENTICATED, "Your sign-in is not valid yet; try again in a moment."}},
    {pb::PASS_REQUIRED, {grpc::UNAUTHENTICATED, "This game seats only signed-in players."}},
    {pb::PASSES_NOT_ACCEPTED, {grpc::FAILED_PRECONDITION, "This server does not take sign-ins."}},
    {pb::PLAYER_ALREADY_SEATED,
     {grpc::FAILED_PRECONDITION, "You already have a seat at this table."}},
};

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::OK:
      return "OK";
    case grpc::CANCELLED:
      return "CANCELLED";
    case grpc::UNKNOWN:
      return "UNKNOWN";
    case grpc::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::ABORTED:
      return "ABORTED";
    case grpc::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::INTERNAL:
      return "INTERNAL";
    case grpc::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "(unknown code)";
  }
}

// A refused call, with the google.rpc details of its status decoded.
struct Refusal {
  std::string method;
  grpc::StatusCode code = grpc::UNKNOWN;
  std::string message;
  bool details_readable = true;  // grpc-status-details-bin parsed as a google.rpc.Status
  int details_code = 0;          // that Status's code: the same as `code`
  bool has_info = false;         // an ErrorInfo among the details
  std::string reason_name;       // ErrorInfo.reason as sent
  // The reason as a generated constant; ERROR_REASON_UNSPECIFIED for a name newer than
  // this client's proto (act on the code then).
  pb::ErrorReason reason = pb::ERROR_REASON_UNSPECIFIED;
  std::string domain;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> fields;  // BadRequest field violations

  static Refusal From(const char* method, const grpc::Status& status) {
    Refusal r;
    r.method = method;
    r.code = status.error_code();
    r.message = status.error_message();
    // gRPC C++ hands over the grpc-status-details-bin trailer as raw bytes (empty when
    // the server sent none); they are a serialized google.rpc.Status whose details are
    // google.protobuf.Any (grpc::ExtractErrorDetails does the same ParseFromString).
    if (status.error_details().empty()) return r;
    google::rpc::Status details;
    if (!details.ParseFromString(status.error_details())) {
      r.details_readable = false;
      return r;
    }
    r.details_code = details.code();
    for (const google::protobuf::Any& any : details.details()) {
      google::rpc::ErrorInfo info;
      google::rpc::BadRequest bad;
      if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info)) {
        r.has_info = true;
        r.reason_name = info.reason();
        r.domain = info.domain();
        r.metadata.insert(info.metadata().begin(), info.metadata().end());
        if (!pb::ErrorReason_Parse(info.reason(), &r.reason))
          r.reason = pb::ERROR_REASON_UNSPECIFIED;
      } else if (any.Is<google::rpc::BadRequest>() && any.UnpackTo(&bad)) {
        for (const auto& v : bad.field_violations()) r.fields.push_back(v.field());
      }
    }
    return r;
  }

  // What a player is shown: a sentence, never a code.
  std::string Sentence() const {
    if (has_info) {
      auto known = kReasons.find(reason);
      if (known != kReasons.end()) {
        std::string text = known->second.sentence;
        auto turn = metadata.find("turn");
        if (reason == pb::NOT_YOUR_TURN && turn != metadata.end()) {
          text += " Seat " + turn->second + " is to play.";
        }
        return text;
      }
      return "The server refused that (a reason this app does not know yet).";
    }
    switch (code) {
      case grpc::UNAVAILABLE:
        return "The server cannot be reached; check the address and try again.";
      case grpc::DEADLINE_EXCEEDED:
        return "The server did not answer in time; try again.";
      case grpc::RESOURCE_EXHAUSTED:
        return "The server is busy; try again in a moment.";
      default:
        return "Something went wrong on the server; try again later.";
    }
  }

  // Worth sending again: the server's own limits and the transport's. Always safe: the
  // token holds the whole match, so the same request gives the same match again.
  bool Retryable() const {
    if (has_info) {
      return reason == pb::RANDOM_UNAVAILABLE || reason == pb::OVERLOADED ||
             reason == pb::SEARCH_QUEUE_FULL || reason == pb::REQUEST_BODY_TIMEOUT ||
             reason == pb::REQUEST_TIMEOUT || reason == pb::CLOCK_SKEW;
    }
    return code == grpc::UNAVAILABLE || code == grpc::RESOURCE_EXHAUSTED ||
           code == grpc::DEADLINE_EXCEEDED || code == grpc::CANCELLED;
  }

  // For the developer's log: the code, the reason and the details.
  std::string Detail() const {
    std::ostringstream out;
    out << method << ": " << CodeName(code) << " " << (has_info ? reason_name : "(no ErrorInfo)");
    if (has_info) out << ", domain " << domain;
    for (const auto& [key, value] : metadata) out << ", " << key << "=" << value;
    if (!fields.empty()) {
      out << ", BadRequest on";
      for (const auto& f : fields) out << " " << f;
    }
    if (!details_readable) out << ", unreadable grpc-status-details-bin";
    out << " (\"" << message << "\")";
    return out.str();
  }
};

// --- Calls -------------------------------------------------------------------------

// The generated stub, on one channel for the whole match, with a deadline on every
// call and a bounded retry of what is worth retrying.
class Api {
 public:
  Api(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds timeout)
      : stub_(pb::AllFivesService::NewStub(channel)), timeout_(timeout) {}

  template <class Request, class Response>
  using Method = grpc::Status (pb::AllFivesService::Stub::*)(grpc::ClientContext*, const Request&,
                                                             Response*);

  // Calls `method`; nothing on success, else the refusal (after up to three retries of
  // a retryable one).
  template <class Request, class Response>
  std::optional<Refusal> Call(const char* name, Method<Request, Response> method,
                              const Request& request, Response* response) {
    for (int attempt = 0;; ++attempt) {
      Check(++calls_ <= kMaxCalls, "more than " + std::to_string(kMaxCalls) + " calls: stuck");
      grpc::ClientContext context;  // one per call: a context cannot be reused
      context.set_deadline(Clock::now() + timeout_);
      grpc::Status status = (stub_.get()->*method)(&context, request, response);
      if (status.ok()) return std::nullopt;
      Refusal refusal = Refusal::From(name, status);
      if (!refusal.Retryable() || attempt == 3) return refusal;
      ++retries_;
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
    }
  }

  // The same, for a call that must succeed: a refusal ends the match.
  template <class Request, class Response>
  Response Must(const char* name, Method<Request, Response> method, const Request& request) {
    Response response;
    if (auto refusal = Call(name, method, request, &response)) {
      throw Inconsistency(refusal->Sentence() + " [" + refusal->Detail() + "]");
    }
    return response;
  }

  int calls() const { return calls_; }
  int retries() const { return retries_; }

 private:
  std::unique_ptr<pb::AllFivesService::Stub> stub_;
  std::chrono::milliseconds timeout_;
  int calls_ = 0;
  int retries_ = 0;
};

// Api::Call and Api::Must with the method's name (for messages) and its stub member.
#define CALL(api, Rpc, request, response) \
  (api).Call(#Rpc, &pb::AllFivesService::Stub::Rpc, request, response)
#define MUST(api, Rpc, request) (api).Must(#Rpc, &pb::AllFivesService::Stub::Rpc, request)

// --- Showing the table -------------------------------------------------------------

std::string TileText(const pb::Tile& t) {
  return "[" + std::to_string(t.a()) + "|" + std::to_string(t.b()) + "]";
}

std::string EndName(pb::End end) { return pb::End_Name(end).substr(4); }  // "END_LEFT" -> "LEFT"

std::string LevelName(pb::BotLevel level) {
  return pb::BotLevel_Name(level).substr(10);  // "BOT_LEVEL_HARD" -> "HARD"
}

// One placed tile, near half towards the centre; a crosswise double as [n:n], * the spinner.
std::string PlacedText(const pb::PlacedTile& p, bool flip) {
  std::string near = std::to_string(p.near()), far = std::to_string(p.far());
  std::string text = p.crosswise() ? "[" + near + ":" + far + "]"
                     : flip        ? "[" + far + "|" + near + "]"
                                   : "[" + near + "|" + far + "]";
  return text + (p.spinner() ? "*" : "");
}

// The layout as GameView.layout describes it: the LEFT arm outermost first, the lead,
// the RIGHT arm; the UP and DOWN arms from the spinner outward.
std::vector<std::string> TableLines(const pb::GameView& view) {
  std::map<pb::Arm, std::vector<const pb::PlacedTile*>> arms;
  for (const auto& p : view.layout()) arms[p.arm()].push_back(&p);
  for (auto& [arm, tiles] : arms) {
    std::sort(tiles.begin(), tiles.end(), [](auto* x, auto* y) { return x->index() < y->index(); });
  }
  std::string line = "table ";
  auto& left = arms[pb::ARM_LEFT];
  for (auto it = left.rbegin(); it != left.rend(); ++it) line += PlacedText(**it, true);
  for (auto* p : arms[pb::ARM_LEAD]) line += PlacedText(*p, false);
  for (auto* p : arms[pb::ARM_RIGHT]) line += PlacedText(*p, false);
  std::vector<std::string> lines = {line};
  for (auto [name, arm] : {std::pair{"    up ", pb::ARM_UP}, std::pair{"  down ", pb::ARM_DOWN}}) {
    if (arms[arm].empty()) continue;
    std::string text = name;
    for (auto* p : arms[arm]) text += PlacedText(*p, false);
    lines.push_back(text);
  }
  std::string ends = "  ends";
  for (const auto& e : view.open_ends())
    ends += " " + EndName(e.end()) + "=" + std::to_string(e.pip());
  lines.push_back(ends + "  count " + std::to_string(view.count()) + "  boneyard " +
                  std::to_string(view.boneyard_size()));
  return lines;
}

std::string SideName(const pb::SideScore& side) {
  std::string name = side.seats_size() > 1 ? "seats " : "seat ";
  for (int i = 0; i < side.seats_size(); ++i)
    name += (i ? "+" : "") + std::to_string(side.seats(i));
  return name;
}

std::string ScoresText(const pb::GameView& view) {
  std::string text;
  for (const auto& s : view.scores()) {
    text += (text.empty() ? "" : ", ") + SideName(s) + " " + std::to_string(s.score());
  }
  return text;
}

bool SameTile(const pb::Tile& x, const pb::Tile& y) { return x.a() == y.a() && x.b() == y.b(); }

bool Holds(const google::protobuf::RepeatedPtrField<pb::Tile>& tiles, const pb::Tile& tile) {
  return std::any_of(tiles.begin(), tiles.end(),
                     [&](const pb::Tile& t) { return SameTile(t, tile); });
}

pb::Tile MakeTile(uint32_t a, uint32_t b) {
  pb::Tile t;
  t.set_a(a);
  t.set_b(b);
  return t;
}

// --- Playing -----------------------------------------------------------------------

struct Options {
  std::string addr = "127.0.0.1:50051";
  uint32_t players = 2;
  bool partnership = false;
  uint32_t target = 0;  // 0: the server's default
  bool winner_takes_pips = false;
  std::vector<pb::BotLevel> seats;  // BOT_LEVEL_UNSPECIFIED for a human seat
  std::chrono::milliseconds timeout{5000};
  std::chrono::milliseconds wait{5000};
  bool quiet = false;
};

// One match: the latest token and view, every human seat's credential, the checks of
// every answer, and the refusals provoked on purpose.
class Match {
 public:
  Match(Api& api, const Options& options) : api_(api), options_(options) {}

  void Play() {
    NewGame();
    while (view_.phase() != pb::PHASE_OVER) {
      if (view_.phase() == pb::PHASE_DEALING) {
        Deal();
      } else {
        Check(view_.phase() == pb::PHASE_PLAYING && view_.has_turn(),
              "a phase without a seat on turn");
        Turn(view_.turn());
      }
    }
    Finish();
  }

 private:
  bool IsBot(uint32_t seat) const { return options_.seats[seat] != pb::BOT_LEVEL_UNSPECIFIED; }

  std::string SeatName(uint32_t seat) const {
    std::string name = "seat " + std::to_string(seat);
    if (IsBot(seat)) name += " (" + LevelName(options_.seats[seat]) + " bot)";
    return name;
  }

  uint32_t SideOf(uint32_t seat) const { return options_.partnership ? seat % 2 : seat; }

  void Say(const std::string& line, bool always = false) const {
    if (always || !options_.quiet) std::cout << line << "\n";
  }

  void NewGame() {
    pb::NewGameRequest request;
    request.mutable_rules()->set_players(options_.players);
    request.mutable_rules()->set_partnership(options_.partnership);
    request.mutable_rules()->set_target(options_.target);
    if (options_.winner_takes_pips) {
      request.mutable_rules()->set_settlement(pb::SETTLEMENT_RULE_WINNER_TAKES_PIPS);
    }
    // One entry per seat: a bot at its level, or a human seat claimed in this call (hot
    // seat: this client holds every human credential).
    for (uint32_t seat = 0; seat < options_.players; ++seat) {
      pb::SeatSetup* setup = request.add_seats();
      if (IsBot(seat)) {
        setup->set_bot(options_.seats[seat]);
      } else {
        setup->set_claim(true);
        humans_.push_back(seat);
      }
    }
    request.set_viewer(humans_.front());
    auto response = MUST(api_, NewGame, request);

    const pb::GameView& view = response.view();
    Check(!response.state().empty() && response.state().size() <= kMaxTokenBytes,
          "NewGame's token size");
    Check(view.phase() == pb::PHASE_DEALING && view.hand_number() == 0,
          "a new match not waiting for Deal");
    Check(view.previous_state_id().empty() && view.state_id().size() == kIdBytes,
          "NewGame's state ids");
    Check(view.rules().players() == options_.players && view.seats_size() == int(options_.players),
          "NewGame's rules and seats");
    for (uint32_t seat = 0; seat < options_.players; ++seat) {
      const pb::SeatStatus& status = view.seats(seat);
      Check(status.seat() == seat &&
                status.kind() == (IsBot(seat) ? pb::SEAT_KIND_BOT : pb::SEAT_KIND_CLAIMED) &&
                status.bot() == options_.seats[seat],
            "view.seats does not show who plays " + SeatName(seat));
    }
    Check(response.credentials_size() == int(humans_.size()), "a credential per claimed seat");
    for (size_t i = 0; i < humans_.size(); ++i) {
      const pb::SeatCredential& c = response.credentials(int(i));
      Check(c.seat() == humans_[i] && c.credential().size() == kIdBytes,
            "the credentials, in seat order");
      credentials_[c.seat()] = c.credential();  // keep it secret, next to the token
    }
    state_ = response.state();
    view_ = view;
    std::string seats;
    for (uint32_t seat = 0; seat < options_.players; ++seat)
      seats += (seat ? ", " : "") + SeatName(seat);
    Say("match " + view.match_id() + ": " + std::to_string(options_.players) + " players (" +
            seats + "), target " + std::to_string(view.rules().target()) +
            (options_.partnership ? ", partnerships" : "") +
            (options_.winner_takes_pips ? ", winner takes the pips" : ""),
        true);
  }

  void Deal() {
    pb::DealRequest request;
    request.set_state(state_);
    request.set_viewer(humans_.front());
    request.set_credential(credentials_[humans_.front()]);
    auto response = MUST(api_, Deal, request);
    Check(response.events_size() > 0 && response.events(0).has_dealt() &&
              response.events(0).dealt().hand() == view_.hand_number() + 1,
          "Deal's first event is not the next hand's Dealt");
    Accept(response.state(), response.view(), response.events(), humans_.front());
  }

  // The seat on turn (always a human one: the server plays its bots) plays or draws.
  void Turn(uint32_t seat) {
    Check(seat < options_.players && !IsBot(seat),
          "the server left " + SeatName(seat) + "'s turn to the client");
    pb::GameView seen = view_;
    if (!view_.has_viewer() || view_.viewer() != seat) {
      // Hot seat: the seat's own view (its hand, legal moves, must_draw).
      pb::ScoreRequest request;
      request.set_state(state_);
      request.set_viewer(seat);
      request.set_credential(credentials_[seat]);
      seen = MUST(api_, Score, request).view();
      Check(seen.state_id() == view_.state_id(), "Score showed another point of the match");
    }
    CheckTurnView(seen, seat);
    Refusals(seen, seat);

    if (seen.must_draw()) {
      pb::DrawRequest request;
      request.set_state(state_);
      request.set_seat(seat);
      request.set_viewer(seat);
      request.set_credential(credentials_[seat]);
      auto response = MUST(api_, Draw, request);
      Check(response.events_size() > 0 && response.events(0).has_tile_drawn() &&
                response.events(0).tile_drawn().seat() == seat &&
                response.events(0).tile_drawn().has_tile(),
            "Draw's first event is not the drawer's TileDrawn, with its tile");
      Accept(response.state(), response.view(), response.events(), seat);
      return;
    }
    // The simple strategy: the most points, then the heaviest tile.
    const pb::LegalMove& move =
        *std::max_element(seen.legal_moves().begin(), seen.legal_moves().end(),
                          [](const pb::LegalMove& x, const pb::LegalMove& y) {
                            return std::pair(x.points(), x.tile().a() + x.tile().b()) <
                                   std::pair(y.points(), y.tile().a() + y.tile().b());
                          });
    pb::PlayRequest request;
    request.set_state(state_);
    request.set_seat(seat);
    *request.mutable_tile() = move.tile();
    request.set_end(move.end());
    request.set_viewer(seat);
    request.set_credential(credentials_[seat]);
    auto response = MUST(api_, Play, request);
    Check(response.events_size() > 0 && response.events(0).has_tile_played(),
          "Play's first event is not a TilePlayed");
    const auto& played = response.events(0).tile_played();
    Check(
        played.seat() == seat && SameTile(played.tile(), move.tile()) && played.end() == move.end(),
        "Play's first event is not the tile played");
    Check(played.points() == move.points(), "the move promised " + std::to_string(move.points()) +
                                                " points and scored " +
                                                std::to_string(played.points()));
    Accept(response.state(), response.view(), response.events(), seat);
    Check(!Holds(view_.hand(), move.tile()), "the tile played is still in hand");
  }

  void CheckTurnView(const pb::GameView& seen, uint32_t seat) const {
    Check(seen.has_viewer() && seen.viewer() == seat && seen.turn() == seat,
          "not the view of the seat on turn");
    Check(seen.hand_size() == int(seen.hand_sizes(seat)), "the hand and its size disagree");
    Check(seen.must_draw() == seen.legal_moves().empty(), "must_draw and legal_moves disagree");
    if (seen.must_draw()) Check(seen.boneyard_size() > 0, "must_draw with an empty boneyard");
    for (const auto& m : seen.legal_moves()) {
      Check(Holds(seen.hand(), m.tile()), "legal move " + TileText(m.tile()) + " is not in hand");
      Check(m.points() % 5 == 0, "a legal move worth " + std::to_string(m.points()));
    }
  }

  // Checks a Deal, Play or Draw answer, asked by `viewer`, against the last view, then
  // keeps it.
  void Accept(const std::string& state, const pb::GameView& view,
              const google::protobuf::RepeatedPtrField<pb::Event>& events, uint32_t viewer) {
    Check(!state.empty() && state.size() <= kMaxTokenBytes,
          "a token of " + std::to_string(state.size()) + " bytes");
    Check(state != state_, "the token did not change");
    Check(view.match_id() == view_.match_id(), "the match id changed");
    // The chain a relay's compare-and-set relies on.
    Check(view.state_id().size() == kIdBytes && view.state_id() != view_.state_id(),
          "the state_id did not change");
    Check(view.previous_state_id() == view_.state_id(),
          "previous_state_id is not the last state_id");
    Check(view.has_viewer() && view.viewer() == viewer, "not the asking seat's view");

    // The move counter counts deals, plays and draws (the bots' too), not passes; the
    // scores move by the points the events announce.
    uint32_t actions = 0;
    std::map<uint32_t, int32_t> delta;
    for (const auto& ev : events) {
      if (ev.has_dealt() || ev.has_tile_played() || ev.has_tile_drawn()) ++actions;
      if (ev.has_tile_played()) {
        const auto& tp = ev.tile_played();
        Check(tp.points() == (tp.count() % 5 == 0 ? tp.count() : 0),
              "a play at count " + std::to_string(tp.count()) + " scored " +
                  std::to_string(tp.points()));
        delta[SideOf(tp.seat())] += int32_t(tp.points());
        if (IsBot(tp.seat())) ++bot_moves_;
      }
      if (ev.has_tile_drawn()) {
        // A drawn tile is shown to its drawer only.
        Check(ev.tile_drawn().has_tile() == (ev.tile_drawn().seat() == viewer),
              "seat " + std::to_string(viewer) + " saw a draw of seat " +
                  std::to_string(ev.tile_drawn().seat()) +
                  (ev.tile_drawn().has_tile() ? " with its tile" : " without the tile"));
        if (IsBot(ev.tile_drawn().seat())) ++bot_moves_;
      }
      if (ev.has_hand_ended()) {
        for (const auto& hand : ev.hand_ended().hands()) {
          uint32_t pips = 0;
          for (const auto& t : hand.tiles()) pips += t.a() + t.b();
          Check(hand.pips() == pips && hand.rounded() == (pips + 2) / 5 * 5,
                "seat " + std::to_string(hand.seat()) + "'s pips at the end of the hand");
        }
        for (const auto& amount : ev.hand_ended().settlement())
          delta[amount.side()] += amount.points();
      }
      if (ev.has_game_ended()) game_ended_ = true;
    }
    Check(view.moves() == view_.moves() + actions,
          "moves went " + std::to_string(view_.moves()) + " -> " + std::to_string(view.moves()) +
              " over " + std::to_string(actions) + " deals, plays and draws");
    Check(view.scores_size() == view_.scores_size(), "the number of sides changed");
    for (int i = 0; i < view.scores_size(); ++i) {
      const auto &before = view_.scores(i), &after = view.scores(i);
      Check(after.score() - before.score() == delta[after.side()],
            SideName(after) + " went " + std::to_string(before.score()) + " -> " +
                std::to_string(after.score()) + ", the events say " +
                std::to_string(delta[after.side()]));
    }
    if (view.phase() == pb::PHASE_PLAYING) {
      uint32_t tiles = view.boneyard_size() + uint32_t(view.layout_size());
      for (uint32_t n : view.hand_sizes()) tiles += n;
      Check(tiles == 28,
            "hands, boneyard and table hold " + std::to_string(tiles) + " tiles, not 28");
      Check(view.hand_size() == int(view.hand_sizes(viewer)), "the viewer's hand and its size");
    }
    Check(game_ended_ == (view.phase() == pb::PHASE_OVER),
          "a GameEnded event exactly when the match is over");
    state_ = state;
    view_ = view;
    Show(events);
  }

  void Show(const google::protobuf::RepeatedPtrField<pb::Event>& events) const {
    for (const auto& ev : events) {
      if (ev.has_dealt()) {
        Say("hand " + std::to_string(ev.dealt().hand()) + ": dealt, " +
            SeatName(ev.dealt().starter()) + " leads");
      } else if (ev.has_tile_played()) {
        const auto& tp = ev.tile_played();
        std::string line = "  " + SeatName(tp.seat()) + " plays " + TileText(tp.tile());
        if (tp.end() != pb::END_UNSPECIFIED) line += " on " + EndName(tp.end());
        line += ", count " + std::to_string(tp.count());
        if (tp.points()) line += ": scores " + std::to_string(tp.points());
        Say(line);
      } else if (ev.has_tile_drawn()) {
        const auto& td = ev.tile_drawn();
        Say("  " + SeatName(td.seat()) + " draws " +
            (td.has_tile() ? TileText(td.tile()) : "a tile"));
      } else if (ev.has_passed()) {
        Say("  " + SeatName(ev.passed().seat()) + " passes");
      } else if (ev.has_hand_ended()) {
        const auto& he = ev.hand_ended();
        std::string how = he.reason() == pb::HAND_END_REASON_DOMINO
                              ? SeatName(he.went_out()) + " went out"
                          : he.reason() == pb::HAND_END_REASON_BLOCKED
                              ? "blocked"
                              : SeatName(he.reached_target()) + " reached the target";
        std::string settlement;
        for (const auto& a : he.settlement()) {
          settlement += " side " + std::to_string(a.side()) + " " + (a.points() >= 0 ? "+" : "") +
                        std::to_string(a.points());
        }
        Say("hand " + std::to_string(he.hand()) + " ended: " + how + "; settlement" + settlement +
                "; scores " + ScoresText(view_),
            true);
      } else if (ev.has_game_ended()) {
        Say("match over: side " + std::to_string(ev.game_ended().winner_side()) + " wins", true);
      }
    }
    if (!options_.quiet && view_.phase() == pb::PHASE_PLAYING && view_.layout_size() > 0) {
      for (const auto& line : TableLines(view_)) Say("    " + line);
    }
  }

  // --- Refusals provoked on purpose ---------------------------------------------------

  // Checks a call refused as expected: its code, and the ErrorInfo (reason compared with
  // the generated constant, domain) and BadRequest read from its status details. The
  // refused call changed nothing: the match goes on from the same token, and the next
  // answer's previous_state_id (checked in Accept) proves it.
  void Expect(const std::string& what, const std::optional<Refusal>& refusal,
              pb::ErrorReason reason, const std::string& field = "") {
    Check(refusal.has_value(),
          what + ": the server took it, expected " + pb::ErrorReason_Name(reason));
    const Refusal& r = *refusal;
    Check(r.details_readable && r.has_info,
          what + ": no ErrorInfo in the status details [" + r.Detail() + "]");
    Check(r.details_code == int(r.code),
          what + ": the details' code is not the status code [" + r.Detail() + "]");
    Check(r.domain == kDomain,
          what + ": ErrorInfo domain \"" + r.domain + "\" [" + r.Detail() + "]");
    Check(r.reason == reason,
          what + ": reason " + r.reason_name + ", expected " + pb::ErrorReason_Name(reason));
    Check(r.code == kReasons.at(reason).code,
          what + ": the wrong code for its reason [" + r.Detail() + "]");
    if (!field.empty()) {
      Check(std::find(r.fields.begin(), r.fields.end(), field) != r.fields.end(),
            what + ": no BadRequest on " + field + " [" + r.Detail() + "]");
    }
    if (reason == pb::NOT_YOUR_TURN) {
      Check(r.metadata.count("turn") && r.metadata.at("turn") == std::to_string(view_.turn()),
            what + ": metadata turn does not name the seat on turn [" + r.Detail() + "]");
    }
    refused_[reason]++;
    Say("  refused on purpose (" + what + "): \"" + r.Sentence() + "\"  [" + r.Detail() + "]");
  }

  // On a human seat's turn, each refusal the moment allows and has not been shown yet.
  void Refusals(const pb::GameView& seen, uint32_t seat) {
    const std::string& credential = credentials_[seat];
    auto play = [&](const pb::Tile& tile, const std::string& cred, uint32_t at) {
      pb::PlayRequest request;
      request.set_state(state_);
      request.set_seat(at);
      *request.mutable_tile() = tile;
      request.set_viewer(at);
      request.set_credential(cred);
      pb::PlayResponse response;
      return CALL(api_, Play, request, &response);
    };
    auto draw = [&](uint32_t at, const std::string& cred) {
      pb::DrawRequest request;
      request.set_state(state_);
      request.set_seat(at);
      request.set_viewer(at);
      request.set_credential(cred);
      pb::DrawResponse response;
      return CALL(api_, Draw, request, &response);
    };
    auto score = [&](const std::string& state, std::optional<uint32_t> viewer,
                     const std::string& cred) {
      pb::ScoreRequest request;
      request.set_state(state);
      if (viewer) request.set_viewer(*viewer);
      request.set_credential(cred);
      pb::ScoreResponse response;
      return CALL(api_, Score, request, &response);
    };

    if (!refused_.count(pb::INVALID_FIELD)) {
      Expect("a tile with a half of 7", play(MakeTile(7, 0), credential, seat), pb::INVALID_FIELD,
             "tile.a");
    }
    if (!refused_.count(pb::TILE_NOT_IN_HAND)) {
      // A tile neither in this hand nor on the table: another hand's, or the boneyard's.
      for (uint32_t a = 0; a <= 6; ++a) {
        for (uint32_t b = a; b <= 6; ++b) {
          pb::Tile tile = MakeTile(a, b);
          bool placed =
              std::any_of(seen.layout().begin(), seen.layout().end(),
                          [&](const pb::PlacedTile& p) { return SameTile(p.tile(), tile); });
          if (placed || Holds(seen.hand(), tile) || refused_.count(pb::TILE_NOT_IN_HAND)) continue;
          Expect("playing " + TileText(tile) + ", not in hand", play(tile, credential, seat),
                 pb::TILE_NOT_IN_HAND);
        }
      }
    }
    if (!refused_.count(pb::MUST_PLAY) && !seen.legal_moves().empty() && seen.boneyard_size() > 0) {
      Expect("drawing with a playable tile in hand", draw(seat, credential), pb::MUST_PLAY);
    }
    if (!refused_.count(pb::CREDENTIAL_INVALID) && !seen.legal_moves().empty()) {
      std::string wrong = credential;
      wrong[0] = char(wrong[0] ^ 0x01);
      Expect("a legal move with a wrong credential", play(seen.legal_moves(0).tile(), wrong, seat),
             pb::CREDENTIAL_INVALID);
    }
    if (!refused_.count(pb::CREDENTIAL_REQUIRED)) {
      Expect("looking at a seat's hand without its credential", score(state_, seat, ""),
             pb::CREDENTIAL_REQUIRED);
    }
    if (!refused_.count(pb::TOKEN_INVALID)) {
      std::string altered = state_;
      altered.back() = char(altered.back() ^ 0x01);  // the last byte: inside the authentication tag
      Expect("an altered token", score(altered, seat, credential), pb::TOKEN_INVALID, "state");
    }
    for (uint32_t other : humans_) {
      if (other != seat && !refused_.count(pb::NOT_YOUR_TURN)) {
        Expect("seat " + std::to_string(other) + " drawing out of turn",
               draw(other, credentials_[other]), pb::NOT_YOUR_TURN);
      }
    }
    for (uint32_t bot = 0; bot < options_.players; ++bot) {
      if (IsBot(bot) && !refused_.count(pb::SEAT_IS_BOT)) {
        Expect("looking at the bot's hand", score(state_, bot, credential), pb::SEAT_IS_BOT);
      }
    }
  }

  void Finish() {
    // Past the end: the match refuses any further deal.
    pb::DealRequest deal;
    deal.set_state(state_);
    pb::DealResponse dealt;
    Expect("dealing after the match", CALL(api_, Deal, deal, &dealt), pb::GAME_OVER);

    // Every refusal the match allowed was shown: these moments come in every match.
    std::vector<pb::ErrorReason> wanted = {
        pb::INVALID_FIELD,       pb::TILE_NOT_IN_HAND, pb::MUST_PLAY, pb::CREDENTIAL_INVALID,
        pb::CREDENTIAL_REQUIRED, pb::TOKEN_INVALID,    pb::GAME_OVER};
    if (humans_.size() > 1) wanted.push_back(pb::NOT_YOUR_TURN);
    if (humans_.size() < options_.players) wanted.push_back(pb::SEAT_IS_BOT);
    for (pb::ErrorReason reason : wanted) {
      Check(refused_.count(reason), "the match never provoked " + pb::ErrorReason_Name(reason));
    }

    // The sheet, as anyone holding the token sees it (no viewer: no credential needed).
    pb::ScoreRequest request;
    request.set_state(state_);
    auto score = MUST(api_, Score, request);
    const pb::ScoreSheet& sheet = score.sheet();
    const pb::GameView& view = score.view();
    Check(view.state_id() == view_.state_id() && view.phase() == pb::PHASE_OVER,
          "Score shows another state");
    Check(view.has_winner_side() && sheet.has_winner_side() &&
              sheet.winner_side() == view.winner_side(),
          "the sheet and the view name the winner");
    Check(sheet.target() == view.rules().target(), "the sheet's target");
    std::vector<pb::SheetRow> rows;
    if (sheet.has_carried()) rows.push_back(sheet.carried());
    rows.insert(rows.end(), sheet.rows().begin(), sheet.rows().end());
    Check(!rows.empty() && rows.back().last_hand() == view.hand_number(),
          "the sheet's last row is the last hand");
    std::map<uint32_t, int32_t> running;
    for (const auto& row : rows) {
      for (const auto& line : row.sides()) {
        running[line.side()] += line.play() + line.settlement();
        Check(line.total() == running[line.side()],
              "the sheet does not add up for side " + std::to_string(line.side()));
      }
    }
    for (const auto& side : view.scores()) {
      Check(running[side.side()] == side.score(),
            "the sheet's total for " + SideName(side) + " is not its score");
    }
    const pb::SideScore& winner = view.scores(int(view.winner_side()));
    Check(winner.score() >= int32_t(sheet.target()), "the winner has not reached the target");
    Check(std::equal(winner.seats().begin(), winner.seats().end(), view.winner_seats().begin(),
                     view.winner_seats().end()),
          "winner_seats are not the winning side's");

    Say("score sheet (target " + std::to_string(sheet.target()) + "):", true);
    for (const auto& row : rows) {
      std::string hands = std::to_string(row.first_hand());
      if (row.last_hand() != row.first_hand()) hands += "-" + std::to_string(row.last_hand());
      std::ostringstream line;
      line << "  hand " << hands;
      for (const auto& s : row.sides()) {
        line << " | side " << s.side() << ": play " << s.play() << ", settlement " << s.settlement()
             << ", total " << s.total();
      }
      Say(line.str(), true);
    }
    Say("winner: " + SideName(winner) + " with " + std::to_string(winner.score()) +
            "; final scores " + ScoresText(view),
        true);
    int refusals = 0;
    for (const auto& [reason, n] : refused_) refusals += n;
    Say("cpp client: " + std::to_string(view.hand_number()) + " hands, " +
            std::to_string(view.moves()) + " moves (" + std::to_string(bot_moves_) +
            " by the server's bots), " + std::to_string(api_.calls()) + " calls, " +
            std::to_string(api_.retries()) + " retried, " + std::to_string(refusals) +
            " refusals provoked and checked; every check held",
        true);
  }

  Api& api_;
  const Options& options_;
  std::string state_;  // the latest token: opaque bytes, sent back exactly as received
  pb::GameView view_;
  std::vector<uint32_t> humans_;
  std::map<uint32_t, std::string> credentials_;  // seat -> credential, every human seat
  std::map<pb::ErrorReason, int> refused_;
  bool game_ended_ = false;
  int bot_moves_ = 0;
};

[[noreturn]] void Usage(const std::string& problem) {
  std::cerr
      << "allfives_client: " << problem << "\n"
      << "usage: allfives_client [--addr HOST:PORT] [--players 2|3|4] [--partnership] [--target "
         "N]\n"
      << "         [--winner-takes-pips] [--bots human,easy,medium,hard,...] [--timeout-ms N]\n"
      << "         [--wait-ms N] [--quiet]\n";
  std::exit(2);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  std::string bots;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(arg + " needs a value");
      return argv[++i];
    };
    auto number = [&]() -> uint32_t {
      std::string v = value();
      try {
        size_t used = 0;
        unsigned long n = std::stoul(v, &used);
        if (used == v.size() && n <= 1000000) return uint32_t(n);
      } catch (const std::exception&) {
      }
      Usage(arg + ": not a number: " + v);
    };
    if (arg == "--addr")
      o.addr = value();
    else if (arg == "--players")
      o.players = number();
    else if (arg == "--partnership")
      o.partnership = true;
    else if (arg == "--target")
      o.target = number();
    else if (arg == "--winner-takes-pips")
      o.winner_takes_pips = true;
    else if (arg == "--bots")
      bots = value();
    else if (arg == "--timeout-ms")
      o.timeout = std::chrono::milliseconds(number());
    else if (arg == "--wait-ms")
      o.wait = std::chrono::milliseconds(number());
    else if (arg == "--quiet")
      o.quiet = true;
    else
      Usage("unknown argument " + arg);
  }
  if (o.players < 2 || o.players > 4) Usage("--players must be 2, 3 or 4");
  o.seats.assign(o.players, pb::BOT_LEVEL_UNSPECIFIED);
  if (!bots.empty()) {
    std::vector<std::string> names;
    std::stringstream in(bots);
    for (std::string name; std::getline(in, name, ',');) names.push_back(name);
    if (names.size() != o.players) Usage("--bots names one player per seat");
    const std::map<std::string, pb::BotLevel> levels = {{"human", pb::BOT_LEVEL_UNSPECIFIED},
                                                        {"easy", pb::BOT_LEVEL_EASY},
                                                        {"medium", pb::BOT_LEVEL_MEDIUM},
                                                        {"hard", pb::BOT_LEVEL_HARD}};
    for (size_t i = 0; i < names.size(); ++i) {
      if (!levels.count(names[i])) Usage("--bots: not human, easy, medium or hard: " + names[i]);
      o.seats[i] = levels.at(names[i]);
    }
  }
  if (std::count(o.seats.begin(), o.seats.end(), pb::BOT_LEVEL_UNSPECIFIED) == 0) {
    Usage("--bots: at least one seat must be human");
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  Options options = ParseArgs(argc, argv);

  // Every reason the proto knows has its sentence: a proto with a new reason fails here,
  // not in front of a player.
  const google::protobuf::EnumDescriptor* reasons = pb::ErrorReason_descriptor();
  for (int i = 0; i < reasons->value_count(); ++i) {
    auto reason = pb::ErrorReason(reasons->value(i)->number());
    if (reason != pb::ERROR_REASON_UNSPECIFIED && !kReasons.count(reason)) {
      std::cerr << "allfives_client: no sentence for ErrorReason " << reasons->value(i)->name()
                << "\n";
      return 1;
    }
  }

  // One channel for the whole match: it keeps its HTTP/2 connection, reconnects by
  // itself when the server closes it (age, idle, a restart), and carries every call.
  auto channel = grpc::CreateChannel(options.addr, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(Clock::now() + options.wait)) {
    std::cerr << "allfives_client: The server cannot be reached; check the address and try again. ("
              << options.addr << ", not connected within " << options.wait.count() << " ms)\n";
    return 1;
  }
  Api api(channel, options.timeout);
  try {
    Match(api, options).Play();
  } catch (const Inconsistency& e) {
    std::cerr << "allfives_client: FAILED: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
