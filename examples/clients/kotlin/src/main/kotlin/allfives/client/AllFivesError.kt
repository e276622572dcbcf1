package allfives.client

import allfives.v1.Allfives.ErrorReason
import com.google.protobuf.InvalidProtocolBufferException
import com.google.rpc.BadRequest
import com.google.rpc.ErrorInfo
import io.grpc.Metadata
import io.grpc.Status

// [START kotlin_errors]
/**
 * A refused call, as an app reads it: the gRPC code, the `ErrorInfo` reason as the
 * generated [ErrorReason] (UNRECOGNIZED for a reason newer than this code; null when
 * the status carries none: a transport failure), its metadata, and the `BadRequest`
 * field violations. A refused call changed nothing.
 */
class AllFivesException(
    val code: Status.Code,
    val reason: ErrorReason?,
    val metadata: Map<String, String>,
    val fields: Map<String, String>,
    message: String,
    cause: Throwable,
) : Exception(message, cause) {
    /** What to tell the player. */
    val sentence: String get() = reason?.let(::sentence) ?: sentenceFor(code)

    companion object {
        const val DOMAIN = "allfives.v1"

        /** The trailer in which the server puts a refusal's `google.rpc.Status`, as bytes. */
        private val DETAILS: Metadata.Key<ByteArray> =
            Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER)

        /**
         * Reads the `google.rpc.Status` the server put in the `grpc-status-details-bin`
         * trailer. Parsed from the trailer's bytes and each detail unpacked by its type
         * URL with `parseFrom`, so it works on protobuf-javalite (Android's
         * `grpc-protobuf-lite`) as on the full runtime. Details that do not parse are
         * left out: the code alone remains.
         */
        fun from(error: Throwable): AllFivesException {
            val status = Status.fromThrowable(error)
            val details = Status.trailersFromThrowable(error)?.get(DETAILS)?.let {
                try {
                    com.google.rpc.Status.parseFrom(it)
                } catch (_: InvalidProtocolBufferException) {
                    null
                }
            }
            var reason: ErrorReason? = null
            val metadata = mutableMapOf<String, String>()
            val fields = mutableMapOf<String, String>()
            for (any in details?.detailsList.orEmpty()) {
                try {
                    when (any.typeUrl.substringAfterLast('/')) {
                        "google.rpc.ErrorInfo" -> {
                            val info = ErrorInfo.parseFrom(any.value)
                            if (info.domain == DOMAIN) {
                                reason = ErrorReason.values().firstOrNull { it.name == info.reason }
                                    ?: ErrorReason.UNRECOGNIZED
                                metadata.putAll(info.metadataMap)
                            }
                        }
                        "google.rpc.BadRequest" ->
                            for (v in BadRequest.parseFrom(any.value).fieldViolationsList) {
                                fields[v.field] = v.description
                            }
                    }
                } catch (_: InvalidProtocolBufferException) {
                    // a damaged detail: skipped, the others read
                }
            }
            return AllFivesException(
                status.code, reason, metadata, fields,
                "${status.code} ${reason ?: "(no reason)"}: ${status.description ?: ""}", error,
            )
        }
    }
}
// [END kotlin_errors]

// [START kotlin_sentences]
/**
 * A sentence for every reason. An exhaustive `when`: a reason added to the proto
 * fails this build until it has its sentence.
 */
fun sentence(reason: ErrorReason): String = when (reason) {
    ErrorReason.ERROR_REASON_UNSPECIFIED, ErrorReason.UNRECOGNIZED ->
        "The server refused that, for a reason this app does not know yet."
    ErrorReason.INVALID_FIELD -> "The app sent something the server could not accept."
    ErrorReason.TOKEN_MALFORMED -> "This saved match is damaged and cannot be opened."
    ErrorReason.TOKEN_UNKNOWN_KEY -> "This saved match can no longer be opened; start a new one."
    ErrorReason.TOKEN_UNSUPPORTED_VERSION -> "This saved match is from an older version of the game; start a new one."
    ErrorReason.TOKEN_INVALID -> "This saved match has been altered and cannot be opened."
    ErrorReason.RANDOM_UNAVAILABLE -> "The server could not shuffle just now. Try again."
    ErrorReason.NOT_YOUR_TURN -> "It is not your turn."
    ErrorReason.TILE_NOT_IN_HAND -> "You do not hold that tile."
    ErrorReason.TILE_DOES_NOT_MATCH -> "That tile does not fit there."
    ErrorReason.END_NOT_OPEN -> "That end of the line is not open."
    ErrorReason.MUST_PLAY -> "You have a tile you can play, so you cannot draw."
    ErrorReason.AMBIGUOUS_END -> "That tile fits more than one end: choose where to play it."
    ErrorReason.WRONG_PHASE -> "That cannot be done at this point of the match."
    ErrorReason.GAME_OVER -> "The match is over."
    ErrorReason.BONEYARD_EMPTY -> "There is nothing left to draw."
    ErrorReason.CREDENTIAL_REQUIRED -> "This device has no key for that seat."
    ErrorReason.CREDENTIAL_INVALID -> "That seat is not yours."
    ErrorReason.SEAT_IS_BOT -> "That seat is played by the computer."
    ErrorReason.SEED_NOT_ALLOWED -> "This server deals its own shuffles."
    ErrorReason.SEATS_OPEN -> "Someone still has to take their seat before the deal."
    ErrorReason.SEAT_TAKEN -> "Someone took that seat first."
    ErrorReason.MALFORMED_REQUEST -> "The app sent a request the server could not read."
    ErrorReason.OVERLOADED -> "The server is busy. Trying again in a moment."
    ErrorReason.SEARCH_QUEUE_FULL -> "The computer players are busy. Trying again in a moment."
    ErrorReason.REQUEST_BODY_TIMEOUT -> "The connection is too slow. Trying again."
    ErrorReason.STATE_STALE -> "The match has moved on: here is where it stands now."
    ErrorReason.STORE_UNAVAILABLE -> "The server could not save the move just now. Trying again."
    ErrorReason.MATCH_FORGOTTEN -> "This match was left too long and is gone; start a new one."
    ErrorReason.STORE_REQUIRED -> "This server cannot go on with that match."
    ErrorReason.TOO_MANY_WATCHES -> "Too many screens are following this match."
    ErrorReason.INVITE_NOT_FOUND -> "No match is waiting under that code."
    ErrorReason.INVITE_RATE_LIMITED -> "Too many codes were tried just now; wait a minute, or use the link."
    ErrorReason.NO_OPEN_SEAT -> "Every seat at this table is taken."
    ErrorReason.REQUEST_TIMEOUT -> "The server took too long to answer. Trying again."
    ErrorReason.TIMEOUT_NOT_DUE -> "The player on turn still has time."
    ErrorReason.NO_TURN_CLOCK -> "This match has no clock."
    ErrorReason.TURN_TIMED_OUT -> "Your time ran out before the move arrived."
    ErrorReason.SEAT_NOT_HELD -> "You are already playing that seat."
    ErrorReason.CLOCK_SKEW -> "The server's clock is off just now. Trying again."
    ErrorReason.PASS_MALFORMED -> "The app sent a sign-in the server could not read."
    ErrorReason.PASS_INVALID -> "Your sign-in could not be checked. Sign in again."
    ErrorReason.PASS_EXPIRED -> "Your sign-in has expired. Sign in again."
    ErrorReason.PASS_NOT_YET_VALID -> "Your sign-in is not valid yet. Try again in a moment."
    ErrorReason.PASS_REQUIRED -> "This game seats only signed-in players."
    ErrorReason.PASSES_NOT_ACCEPTED -> "This server does not take sign-ins."
    ErrorReason.PLAYER_ALREADY_SEATED -> "You already have a seat at this table."
}
// [END kotlin_sentences]

/** For a failure without a reason: the transport's or the server's limits. */
fun sentenceFor(code: Status.Code): String = when (code) {
    Status.Code.UNAVAILABLE -> "The server cannot be reached. Check the connection."
    Status.Code.DEADLINE_EXCEEDED -> "The server took too long. Try again." // this call's own deadline
    Status.Code.CANCELLED -> "The connection dropped the request. Try again." // never sent, or cut on the way
    else -> "Something went wrong ($code)."
}

/**
 * Whether the same call may simply be made again (docs/clients.md, "Errors"): the
 * transport's failures and the limits that did nothing. Not STATE_STALE (get the
 * latest token instead) nor INVITE_RATE_LIMITED (wait out the minute).
 */
val AllFivesException.retryable: Boolean
    get() = when (reason) {
        null -> code in setOf(
            Status.Code.UNAVAILABLE, Status.Code.DEADLINE_EXCEEDED, Status.Code.CANCELLED,
        )
        ErrorReason.OVERLOADED, ErrorReason.SEARCH_QUEUE_FULL, ErrorReason.RANDOM_UNAVAILABLE,
        ErrorReason.STORE_UNAVAILABLE, ErrorReason.REQUEST_BODY_TIMEOUT, ErrorReason.TOO_MANY_WATCHES,
        ErrorReason.REQUEST_TIMEOUT, ErrorReason.CLOCK_SKEW -> true
        else -> false
    }
