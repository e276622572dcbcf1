package allfives.client

import allfives.v1.Allfives.ClockView
import allfives.v1.Allfives.ErrorReason
import allfives.v1.Allfives.GameView
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.TimeSource
import kotlinx.coroutines.delay

// Turn clocks (docs/rules.md section 11) are judged by the server's clock when a call
// arrives; no timer runs anywhere. A view's ClockView gives the server's times in
// milliseconds since the Unix epoch, with now_ms, the server's time when it made the
// view: a device never compares them with its own wall clock (which may be off by
// seconds), only with now_ms, and counts the difference down on its monotonic clock
// (TimeSource.Monotonic) from when the view arrived ([Table.receivedAt]).

typealias Mark = TimeSource.Monotonic.ValueTimeMark

// [START kotlin_countdown]
/** A clocked view's ClockView read against this device's monotonic clock. */
class Countdown(val clock: ClockView, val receivedAt: Mark) {
    /**
     * When the server's time [serverMs] comes on this device: as long after the view
     * arrived as it is after the view's now_ms. (now_ms was read when the call arrived,
     * so this errs late by the call's time: a countdown shows a little more time than
     * there is (the answer's way back, which the lag grace covers), and a claim
     * is never early.)
     */
    fun local(serverMs: Long): Mark = receivedAt + (serverMs - clock.nowMs).milliseconds

    /** When the seat on turn's time runs out; null when no human seat is on turn. */
    val deadline: Mark? get() = if (clock.hasTurnDeadlineMs()) local(clock.turnDeadlineMs) else null

    /** The countdown to show at [now] (by default now): the seat on turn's time left,
     * never below zero; null when no human seat is on turn (between hands, the match over). */
    fun timeLeft(now: Mark = TimeSource.Monotonic.markNow()): Duration? =
        deadline?.let { (it - now).coerceAtLeast(Duration.ZERO) }

    /** From when the server takes the seat on turn's timeout (its deadline plus the
     * server's lag grace); null when no human seat is on turn. */
    val claimableAt: Mark? get() = if (clock.hasClaimableAtMs()) local(clock.claimableAtMs) else null

    companion object {
        /** The countdown of [view], which arrived at [receivedAt]; null without a clock. */
        fun of(view: GameView, receivedAt: Mark): Countdown? =
            if (view.hasClock()) Countdown(view.clock, receivedAt) else null
    }
}

/** The countdown of this table's view, from when it arrived; null without a clock. */
val Table.countdown: Countdown? get() = Countdown.of(view, receivedAt)
// [END kotlin_countdown]

/**
 * How often [claimWhenDue] claims after TIMEOUT_NOT_DUE. The refusal says when the
 * refusing server will take the timeout by its own clock (claimable_at_ms, now_ms):
 * one wait is enough unless the next claim reaches a replica whose clock is behind
 * (within the skew the deployment allows); the backoff, doubling up to 2 s, covers
 * that past the default --max-clock-skew-ms of 1 s.
 */
const val CLAIM_NOT_DUE_ATTEMPTS = 6

// [START kotlin_claim_when_due]
/**
 * Claims the timeout of the seat on turn for [me] (any seat of the match) once the
 * table's countdown says it is due: suspends until its claimableAt, then calls
 * ClaimTimeout (CLOCK_SKEW and UNAVAILABLE retried with backoff, as every call).
 * Refused TIMEOUT_NOT_DUE, it waits the refusal's claimable_at_ms - now_ms (the refusing
 * server's clock), a short backoff at least, and claims again, up to
 * [CLAIM_NOT_DUE_ATTEMPTS] times. Any other refusal is thrown at once: STATE_STALE (a
 * match store took a late move or another claim first), WRONG_PHASE or GAME_OVER (no
 * seat on turn). Cancelling the caller's scope ends it at any point, with the scope's
 * CancellationException. Returns the table after the claim and how many
 * TIMEOUT_NOT_DUE it waited out.
 */
suspend fun AllFivesRepository.claimWhenDue(table: Table, me: Seat): Pair<Table, Int> {
    var at = table.countdown?.claimableAt ?: TimeSource.Monotonic.markNow() // the server says why
    var backoff = 200L
    for (notDue in 0 until CLAIM_NOT_DUE_ATTEMPTS) {
        delay(-at.elapsedNow()) // nothing when the moment has passed
        try {
            return claimTimeout(table, me) to notDue
        } catch (e: AllFivesException) {
            if (e.reason != ErrorReason.TIMEOUT_NOT_DUE || notDue + 1 == CLAIM_NOT_DUE_ATTEMPTS) throw e
            val refusedAt = TimeSource.Monotonic.markNow()
            at = refusedAt + (backoff / 2 + Random.nextLong(backoff / 2 + 1)).milliseconds
            val claimable = e.metadata["claimable_at_ms"]?.toLongOrNull()
            val now = e.metadata["now_ms"]?.toLongOrNull()
            val due = when {
                claimable != null && now != null -> refusedAt + (claimable - now).milliseconds
                claimable != null -> table.countdown?.local(claimable) // an older server: no now_ms
                else -> null
            }
            if (due != null && due > at) at = due
            backoff = minOf(2 * backoff, 2_000L)
        }
    }
    error("unreachable")
}
// [END kotlin_claim_when_due]
