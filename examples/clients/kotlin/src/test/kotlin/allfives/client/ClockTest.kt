package allfives.client

import allfives.v1.Allfives
import allfives.v1.Allfives.AbsenceReason
import allfives.v1.Allfives.BotLevel
import allfives.v1.Allfives.ErrorReason
import allfives.v1.Allfives.Event
import allfives.v1.Allfives.Phase
import allfives.v1.Allfives.SeatKind
import allfives.v1.AllFivesServiceGrpcKt.AllFivesServiceCoroutineImplBase
import com.google.protobuf.ByteString
import io.grpc.Status
import io.grpc.inprocess.InProcessChannelBuilder
import io.grpc.inprocess.InProcessServerBuilder
import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.Duration
import kotlin.time.Duration.Companion.hours
import kotlin.time.Duration.Companion.milliseconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * Turn clocks against the server the quick start starts (its default lag grace, 2 s).
 * The server judges by its clock when a call arrives, so each decision is checked
 * against the times it stated, never against how long anything took here.
 */
class ClockTest {
    private val repo = Servers.repository

    private fun refused(reason: ErrorReason, e: AllFivesException) {
        assertEquals(Status.Code.FAILED_PRECONDITION, e.code, e.message)
        assertEquals(reason, e.reason, e.message)
        assertEquals(sentence(reason), e.sentence)
    }

    /** A dealt match of two on [clock], both seats held here (seat 1 claimed with ClaimSeat). */
    private suspend fun clocked(clock: Allfives.TurnClock?, target: Int = 100): Pair<Table, Map<Int, Seat>> {
        val (made, zero) = repo.newMatch(players = 2, target = target, bots = emptyMap(), clock = clock)
        val (claimed, one) = repo.claimSeat(made.state, seat = 1)
        return repo.deal(claimed, zero) to mapOf(0 to zero, 1 to one)
    }

    private fun absentAt(events: List<Event>, seat: Int, why: AbsenceReason) = events.indexOfFirst {
        it.hasSeatAbsent() && it.seatAbsent.seat == seat && it.seatAbsent.reason == why
    }

    private fun movedBy(events: List<Event>, seat: Int) = events.any {
        (it.hasTilePlayed() && it.tilePlayed.seat == seat) || (it.hasTileDrawn() && it.tileDrawn.seat == seat) ||
            (it.hasPassed() && it.passed.seat == seat)
    }

    @Test
    fun `a match without a clock has nothing to claim`() = runBlocking {
        val (table, seats) = clocked(clock = null)
        assertNull(table.countdown)
        refused(ErrorReason.NO_TURN_CLOCK, assertThrows { repo.claimTimeout(table, seats.getValue(0)) })
    }

    @Test
    fun `the default clock counts down from turn_deadline_ms - now_ms, and a bot holds no seat yet`() = runBlocking {
        val (table, seats) = clocked(Allfives.TurnClock.getDefaultInstance())
        val c = table.view.clock
        assertEquals(c.moveBeganMs + 90_000, c.turnDeadlineMs) // 30 s a move and a 60 s bank
        assertTrue(c.claimableAtMs >= c.turnDeadlineMs)
        // On the view's arrival, exactly the view's deadline - now_ms; later, less.
        val countdown = table.countdown!!
        assertEquals((c.turnDeadlineMs - c.nowMs).milliseconds, countdown.timeLeft(table.receivedAt))
        assertEquals((c.turnDeadlineMs - c.nowMs - 1_500).milliseconds, countdown.timeLeft(table.receivedAt + 1_500.milliseconds))
        assertEquals(Duration.ZERO, countdown.timeLeft(table.receivedAt + 1.hours))
        val waiting = seats.getValue(1 - table.view.turn)
        refused(ErrorReason.SEAT_NOT_HELD, assertThrows { repo.returnToSeat(table, waiting) })
    }

    @Test
    fun `cancelling a claim that waits ends it with the scope's cancellation, not an error`() = runBlocking {
        val (table, seats) = clocked(Allfives.TurnClock.getDefaultInstance())
        val waiting = seats.getValue(1 - table.view.turn)
        // Due in 90 s and more: the claim still waits when the timeout cancels it.
        assertThrows<TimeoutCancellationException> { withTimeout(300) { repo.claimWhenDue(table, waiting) } }
        Unit
    }

    @Test
    fun `cancelling a claim whose call is in flight ends it with the scope's cancellation, not an error`() = runBlocking {
        // A server in this process whose ClaimTimeout never answers: the claim is
        // cancelled while its call waits for the answer, whatever the machine's speed.
        val arrived = CompletableDeferred<Unit>()
        val silent = object : AllFivesServiceCoroutineImplBase() {
            override suspend fun claimTimeout(request: Allfives.ClaimTimeoutRequest): Allfives.ClaimTimeoutResponse {
                arrived.complete(Unit)
                awaitCancellation()
            }
        }
        val name = InProcessServerBuilder.generateName()
        val server = InProcessServerBuilder.forName(name).directExecutor().addService(silent).build().start()
        val channel = InProcessChannelBuilder.forName(name).directExecutor().build()
        try {
            val repo = AllFivesRepository(channel, deadlineMs = 600_000)
            // No clock: claimWhenDue calls at once (the server would say why).
            val table = Table(ByteString.copyFromUtf8("token"), Allfives.GameView.getDefaultInstance())
            var thrown: Throwable? = null
            val claim = launch {
                try {
                    repo.claimWhenDue(table, Seat(1, ByteString.copyFromUtf8("credential")))
                } catch (t: Throwable) {
                    thrown = t
                    throw t
                }
            }
            arrived.await()
            claim.cancelAndJoin()
            assertTrue(thrown is CancellationException && thrown !is AllFivesException) { "the claim ended with $thrown" }
        } finally {
            channel.shutdownNow()
            server.shutdownNow()
        }
    }

    @Test
    fun `on a 1 s clock the seat that stops moving is timed out once due, leaves and comes back`() = runBlocking {
        // [START kotlin_clock_match]
        // One second a move and no bank: the seat on turn stops moving, and the other seat
        // claims its timeout as soon as the view it was given says it may.
        val clock = Allfives.TurnClock.newBuilder().setMoveSeconds(1).setBankSeconds(0).build()
        val (dealt, seats) = clocked(clock)
        val late = seats.getValue(dealt.view.turn)
        val waiting = seats.getValue(1 - late.seat)
        // A claim at once is refused, naming the moment the server will take it.
        val early = assertThrows<AllFivesException> { repo.claimTimeout(dealt, waiting) }
        val (claimed, notDue) = repo.claimWhenDue(dealt, waiting)
        // [END kotlin_clock_match]
        refused(ErrorReason.TIMEOUT_NOT_DUE, early)
        assertEquals(dealt.view.clock.claimableAtMs.toString(), early.metadata["claimable_at_ms"])
        println("clock: seat ${waiting.seat} claimed seat ${late.seat}'s timeout ($notDue TIMEOUT_NOT_DUE waited out)")
        // Taken by a server whose clock read past claimable_at_ms: SeatAbsent, then the
        // bot's move for the late seat.
        assertTrue(claimed.view.clock.nowMs >= dealt.view.clock.claimableAtMs)
        assertEquals(0, absentAt(claimed.events, late.seat, AbsenceReason.ABSENCE_REASON_TIMED_OUT)) { "${claimed.events}" }
        assertTrue(movedBy(claimed.events.drop(1), late.seat)) { "no move of the bot for seat ${late.seat}: ${claimed.events}" }
        val after = claimed.view.getSeats(late.seat)
        assertEquals(SeatKind.SEAT_KIND_CLAIMED, after.kind) // one timeout; the bot takes the seat at two
        assertEquals(1, after.timeoutsInRow)

        // The late seat's move, sent from the token it had, arrives after the claim: its
        // time ran out, and nothing is applied.
        val mine = repo.score(dealt.state, late).view
        val tooLate = assertThrows<AllFivesException> {
            if (mine.mustDraw) repo.draw(dealt, late) else repo.play(dealt, late, mine.getLegalMoves(0))
        }
        refused(ErrorReason.TURN_TIMED_OUT, tooLate)
        assertEquals(dealt.view.clock.turnDeadlineMs.toString(), tooLate.metadata["turn_deadline_ms"])

        // Its player leaves: a bot holds the seat until it comes back.
        val left = repo.leave(claimed, late)
        val at = absentAt(left.events, late.seat, AbsenceReason.ABSENCE_REASON_LEFT)
        assertTrue(at >= 0 && left.events.getOrNull(at + 1)?.takeIf { it.hasBotTookSeat() }?.botTookSeat?.seat == late.seat) {
            "Leave's events are not SeatAbsent (LEFT) then BotTookSeat: ${left.events}"
        }
        val held = left.view.getSeats(late.seat)
        assertEquals(SeatKind.SEAT_KIND_HELD_BY_BOT, held.kind)
        assertEquals(AbsenceReason.ABSENCE_REASON_LEFT, held.absent)
        assertEquals(BotLevel.BOT_LEVEL_MEDIUM, held.bot)
        assertTrue(left.view.phase != Phase.PHASE_OVER)

        // It comes back, and plays on from its next turn.
        val back = repo.returnToSeat(left, late)
        assertTrue(back.events.any { it.hasSeatReturned() && it.seatReturned.seat == late.seat }) { "${back.events}" }
        val returned = back.view.getSeats(late.seat)
        assertEquals(SeatKind.SEAT_KIND_CLAIMED, returned.kind)
        assertEquals(AbsenceReason.ABSENCE_REASON_UNSPECIFIED, returned.absent)
        assertEquals(0, returned.timeoutsInRow)
    }
}
