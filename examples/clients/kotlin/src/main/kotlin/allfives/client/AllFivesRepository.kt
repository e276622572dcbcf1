package allfives.client

import allfives.v1.AllFivesServiceGrpcKt.AllFivesServiceCoroutineStub
import allfives.v1.Allfives
import allfives.v1.Allfives.BotLevel
import allfives.v1.Allfives.GameView
import allfives.v1.Allfives.LegalMove
import allfives.v1.Allfives.Rules
import allfives.v1.Allfives.SeatSetup
import com.google.protobuf.ByteString
import io.grpc.ManagedChannel
import io.grpc.ManagedChannelBuilder
import java.security.SecureRandom
import java.util.concurrent.TimeUnit
import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.TimeSource
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.catch
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.mapNotNull

/**
 * A match as a device holds it: the latest token, the view it came with, and when it
 * arrived on this device's monotonic clock (what a turn clock's [Countdown] counts from).
 * [receivedAt] is part of equals and hashCode: the same answer received twice makes two
 * unequal tables, so compare [state] to tell whether the match moved.
 */
data class Table(
    val state: ByteString,
    val view: GameView,
    val events: List<Allfives.Event> = emptyList(),
    val receivedAt: TimeSource.Monotonic.ValueTimeMark = TimeSource.Monotonic.markNow(),
)

/** A seat this device plays: its number and the credential only its player holds. */
data class Seat(val seat: Int, val credential: ByteString)

// [START kotlin_channel]
/** One channel per server, kept for the app's life (on Android: grpc-okhttp's builder). */
fun channel(address: String): ManagedChannel =
    ManagedChannelBuilder.forTarget(address).usePlaintext().build()
// [END kotlin_channel]

/**
 * What an app's view model calls: every call of the engine as a suspend function
 * with a deadline per attempt, refusals as [AllFivesException], failures that did
 * nothing retried with backoff.
 */
class AllFivesRepository(
    channel: ManagedChannel,
    private val deadlineMs: Long = 5_000,
    private val attempts: Int = 4,
) {
    private val stub = AllFivesServiceCoroutineStub(channel)
    private val random = SecureRandom()

    private fun deadline() = stub.withDeadlineAfter(deadlineMs, TimeUnit.MILLISECONDS)

    // [START kotlin_call]
    /**
     * One call: a deadline per attempt, retried with backoff after a failure that did
     * nothing. Every call here is safe to repeat: the same token gives the same match,
     * and [claimSeat] always sends a claim key, which makes its retry the same claim.
     */
    private suspend fun <T> call(rpc: suspend (AllFivesServiceCoroutineStub) -> T): T {
        var wait = 100L
        for (attempt in 1..attempts) {
            try {
                return rpc(deadline())
            } catch (e: CancellationException) {
                throw e // the caller's scope was cancelled: not a failure of the call
            } catch (e: Exception) {
                val error = AllFivesException.from(e)
                if (!error.retryable || attempt == attempts) throw error
                delay(wait)
                wait *= 2
            }
        }
        error("unreachable")
    }
    // [END kotlin_call]

    // [START kotlin_new_game]
    /** A match: seat 0 yours (claimed now), the others open for friends or bots. */
    suspend fun newMatch(
        players: Int,
        target: Int,
        bots: Map<Int, BotLevel>,
        partnership: Boolean = false,
        name: String = "",
        clock: Allfives.TurnClock? = null, // a turn clock times every human seat's moves
    ): Pair<Table, Seat> {
        val rules = Rules.newBuilder().setPlayers(players).setTarget(target).setPartnership(partnership)
        if (clock != null) rules.setClock(clock)
        val request = Allfives.NewGameRequest.newBuilder().setRules(rules).setViewer(0)
        for (seat in 0 until players) {
            val setup = SeatSetup.newBuilder()
            when {
                seat == 0 -> setup.setClaim(true).setDisplayName(name)
                seat in bots -> setup.setBot(bots.getValue(seat))
                else -> {} // open: a friend claims it with ClaimSeat
            }
            request.addSeats(setup)
        }
        // Safe to repeat: a NewGame whose answer was lost makes a match nobody sees.
        val answer = call { it.newGame(request.build()) }
        return Table(answer.state, answer.view) to Seat(0, answer.getCredentials(0).credential)
    }
    // [END kotlin_new_game]

    /** Claims an open seat; the claim key makes a retry the same claim. */
    suspend fun claimSeat(state: ByteString, seat: Int, name: String = ""): Pair<Table, Seat> {
        val key = ByteArray(16).also(random::nextBytes)
        val request = Allfives.ClaimSeatRequest.newBuilder().setState(state).setSeat(seat)
            .setClaimKey(ByteString.copyFrom(key)).setDisplayName(name).build()
        val answer = call { it.claimSeat(request) }
        return Table(answer.state, answer.view) to Seat(seat, answer.credential.credential)
    }

    suspend fun deal(table: Table, me: Seat): Table {
        val request = Allfives.DealRequest.newBuilder().setState(table.state)
            .setViewer(me.seat).setCredential(me.credential).build()
        return call { it.deal(request) }.let { Table(it.state, it.view, it.eventsList) }
    }

    suspend fun play(table: Table, me: Seat, move: LegalMove): Table {
        val request = Allfives.PlayRequest.newBuilder().setState(table.state).setSeat(me.seat)
            .setViewer(me.seat).setCredential(me.credential).setTile(move.tile).setEnd(move.end).build()
        return call { it.play(request) }.let { Table(it.state, it.view, it.eventsList) }
    }

    suspend fun draw(table: Table, me: Seat): Table {
        val request = Allfives.DrawRequest.newBuilder().setState(table.state).setSeat(me.seat)
            .setViewer(me.seat).setCredential(me.credential).build()
        return call { it.draw(request) }.let { Table(it.state, it.view, it.eventsList) }
    }

    /** The sheet, and the view as [me] sees it (null: a spectator's). */
    suspend fun score(state: ByteString, me: Seat?): Allfives.ScoreResponse {
        val request = Allfives.ScoreRequest.newBuilder().setState(state)
        if (me != null) request.setViewer(me.seat).setCredential(me.credential)
        return call { it.score(request.build()) }
    }

    suspend fun suggest(table: Table, me: Seat, level: BotLevel): Allfives.SuggestResponse {
        val request = Allfives.SuggestRequest.newBuilder().setState(table.state).setSeat(me.seat)
            .setCredential(me.credential).setLevel(level).build()
        return call { it.suggest(request) }
    }

    /**
     * ClaimTimeout now, for [me] (any seat of the match): the seat on turn's timeout, as
     * the match's rules.absence says. Refused TIMEOUT_NOT_DUE before its claimable_at_ms
     * ([claimWhenDue] waits for it); NO_TURN_CLOCK on a match without a clock.
     */
    suspend fun claimTimeout(table: Table, me: Seat): Table {
        val request = Allfives.ClaimTimeoutRequest.newBuilder().setState(table.state).setSeat(me.seat)
            .setCredential(me.credential).build()
        return call { it.claimTimeout(request) }.let { Table(it.state, it.view, it.eventsList) }
    }

    /**
     * Leave: a bot holds [me]'s seat until its player comes back ([returnToSeat]), or the
     * seat forfeits, as the match's rules.absence says (from the first deal to the end).
     */
    suspend fun leave(table: Table, me: Seat): Table {
        val request = Allfives.LeaveRequest.newBuilder().setState(table.state).setSeat(me.seat)
            .setCredential(me.credential).build()
        return call { it.leave(request) }.let { Table(it.state, it.view, it.eventsList) }
    }

    /**
     * ReturnToSeat: [me]'s player takes the seat back from the bot holding it and plays
     * from its next turn; refused SEAT_NOT_HELD when no bot holds it.
     */
    suspend fun returnToSeat(table: Table, me: Seat): Table {
        val request = Allfives.ReturnToSeatRequest.newBuilder().setState(table.state).setSeat(me.seat)
            .setCredential(me.credential).build()
        return call { it.returnToSeat(request) }.let { Table(it.state, it.view, it.eventsList) }
    }

    // [START kotlin_watch]
    /**
     * The match's changes as they happen (a server with a match store): the latest
     * state at once if [lastStateId] is not it, then every move on any replica. The
     * flow completes when the server ends the stream (its connection aged, or it
     * drains): watch again with the last state id seen, and nothing is missed.
     * Heartbeats are dropped. No deadline: a stream lives as long as its connection.
     * A CancellationException (a scope cancelled) passes through, never an error.
     */
    fun watch(state: ByteString, me: Seat?, lastStateId: ByteString): Flow<Table> {
        val request = Allfives.WatchRequest.newBuilder().setState(state).setLastStateId(lastStateId)
        if (me != null) request.setViewer(me.seat).setCredential(me.credential)
        return stub.watch(request.build())
            .catch { throw if (it is CancellationException) it else AllFivesException.from(it) }
            .mapNotNull { if (it.hasChange()) it.change else null }
            .map { Table(it.state, it.view, it.eventsList) }
    }
    // [END kotlin_watch]
}
