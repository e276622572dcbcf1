package allfives.client

import allfives.v1.AllFivesServiceGrpcKt.AllFivesServiceCoroutineStub
import allfives.v1.Allfives
import allfives.v1.Allfives.BotLevel
import allfives.v1.Allfives.ErrorReason
import allfives.v1.Allfives.GameView
import allfives.v1.Allfives.LegalMove
import allfives.v1.Allfives.Phase
import allfives.v1.Allfives.Rules
import allfives.v1.Allfives.SeatSetup
import com.google.protobuf.ByteString
import io.grpc.ManagedChannel
import io.grpc.ManagedChannelBuilder
import io.grpc.Status
import java.security.SecureRandom
import java.util.concurrent.TimeUnit
import kotlin.coroutines.cancellation.CancellationException
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlin.time.DurationUnit
import kotlin.time.TimeSource
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.delay
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.catch
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.produceIn
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.mapNotNull
import kotlinx.coroutines.withTimeoutOrNull

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
    /** From a watch: the device had missed more than the last change (or seen nothing):
     * the view replaces what it shows, and [events] are the current hand's from its deal. */
    val catchUp: Boolean = false,
)

/** A seat this device plays: its number and the credential only its player holds. */
data class Seat(val seat: Int, val credential: ByteString)

// [START kotlin_channel]
/**
 * One channel per server, kept for the app's life. On a JVM, grpc-netty-shaded's; in
 * an Android app, grpc-android's `AndroidChannelBuilder.forTarget(address)
 * .context(appContext)` over grpc-okhttp (it reconnects when the device's network
 * changes), or grpc-okhttp's `OkHttpChannelBuilder.forTarget(address)` alone, with
 * `useTransportSecurity()` (plaintext only for a local server).
 */
fun channel(address: String): ManagedChannel =
    ManagedChannelBuilder.forTarget(address).usePlaintext().build()
// [END kotlin_channel]

/**
 * What an app's view model calls: every call of the engine as a suspend function
 * with a deadline per attempt, refusals as [AllFivesException], failures that did
 * nothing retried with backoff.
 */
class AllFivesRepository(
    private val channel: ManagedChannel,
    private val deadlineMs: Long = 5_000,
    private val attempts: Int = 4,
) {
    private val stub = AllFivesServiceCoroutineStub(channel)
    private val random = SecureRandom()

    private fun deadline() = stub.withDeadlineAfter(deadlineMs, TimeUnit.MILLISECONDS)

    // [START kotlin_call]
    /**
     * One call: a deadline per attempt, retried with a jittered, capped backoff after a failure that did
     * nothing. Every call here is safe to repeat: the same token gives the same match,
     * and [claimSeat] always sends a claim key, which makes its retry the same claim.
     */
    private suspend fun <T> call(rpc: suspend (AllFivesServiceCoroutineStub) -> T): T {
        for (attempt in 1..attempts) {
            try {
                return rpc(deadline())
            } catch (e: Exception) {
                currentCoroutineContext().ensureActive() // cancelled: that, not the call's end
                val error = failure(e) // a CancellationException not ours: CANCELLED
                if (!error.retryable || attempt == attempts) throw error
                delay(jitteredBackoff(attempt, 100.milliseconds, 2.seconds)) // 50-100 ms, doubling to 1-2 s
            }
        }
        error("unreachable")
    }

    /**
     * A call's or a stream's failure as an [AllFivesException]. A CancellationException
     * is ours when this coroutine is cancelled (then it is thrown again); else it came
     * from the call (grpc-kotlin closes with the status's cause when it is one: an
     * interceptor's cancel): CANCELLED, tried again like any call cut on the way.
     */
    private suspend fun failure(e: Throwable): AllFivesException {
        if (e is CancellationException) {
            currentCoroutineContext().ensureActive()
            return AllFivesException(Status.Code.CANCELLED, null, emptyMap(), emptyMap(), "CANCELLED (no reason): $e", e)
        }
        return AllFivesException.from(e)
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
     * drains): watch again with the last state id seen, and nothing is missed
     * ([follow] does so, with backoff and a liveness bound, to the match's end).
     * Heartbeats are dropped. No deadline: a stream lives as long as its connection.
     * A CancellationException (a scope cancelled) passes through, never an error; one
     * from the call itself (not this scope's) is AllFivesException CANCELLED.
     */
    fun watch(state: ByteString, me: Seat?, lastStateId: ByteString): Flow<Table> {
        val request = Allfives.WatchRequest.newBuilder().setState(state).setLastStateId(lastStateId)
        if (me != null) request.setViewer(me.seat).setCredential(me.credential)
        return stub.watch(request.build())
            .catch { throw failure(it) } // our cancellation passes through
            .mapNotNull { if (it.hasChange()) it.change else null }
            .map { Table(it.state.ifEmpty(state), it.view, it.eventsList, catchUp = it.catchUp) }
    }
    // [END kotlin_watch]

    // [START kotlin_follow]
    /**
     * Follows a match until it is over: the flow a view model collects (a server with a
     * match store). It emits every change after [start] (a [Table.catchUp] one when
     * the device missed several: its view replaces the table) and completes by itself
     * after the change that ends the match (at once if [start] is over). Each collection
     * starts again from [start]: to collect again (the screen shown again), call
     * `follow` again with the latest table, not the same flow.
     *
     * It watches again from the last state id seen, so that nothing is missed or
     * repeated, after every stream that ends: with OK (the server drained, or the
     * connection aged), with an error (Watch changes nothing, so every error is tried
     * again: UNAVAILABLE, a proxy's INTERNAL, the server's load refusals...) except a
     * final one ([endsFollow]: the match forgotten, the seat's credential refused, a
     * damaged token, a server without a store), or silent for [FollowPolicy.liveness]
     * (a half-open connection: its channel's connections are closed, and the next
     * stream opens a new one). Between streams it waits [FollowPolicy.backoff], which
     * doubles at each stream in a row that brought no change and lived less than the
     * liveness bound (a TOO_MANY_WATCHES end always counts), up to
     * [FollowPolicy.maxBackoff]; the channel's own reconnect backoff is reset after
     * UNAVAILABLE, so that this one paces the reconnects. [onConnected] is told at a
     * stream's first message (a heartbeat comes at once if nothing changed), to clear a
     * "reconnecting" banner; [onRewatch] is told why a stream ended before each wait
     * (null: an OK end). A final refusal ends the flow with its [AllFivesException]; an
     * exception of the collector's passes through unchanged, never retried; cancelling
     * the collector ends the flow with the CancellationException, never an error.
     */
    fun follow(
        start: Table,
        me: Seat?,
        policy: FollowPolicy = FollowPolicy(),
        onConnected: () -> Unit = {},
        onRewatch: (cause: Throwable?) -> Unit = {},
    ): Flow<Table> = flow {
        var latest = start
        var failures = 0 // streams in a row that brought no change and lived less than policy.liveness
        while (latest.view.phase != Phase.PHASE_OVER) {
            var changed = false
            var connected = false
            val opened = TimeSource.Monotonic.markNow()
            val cause = try {
                watchOnce(latest, me, policy.liveness) { change ->
                    if (!connected) {
                        connected = true
                        onConnected()
                    }
                    if (change != null) {
                        changed = true
                        latest = change
                        try {
                            emit(change)
                        } catch (e: Throwable) { // the collector's own (or first()'s): not this stream's end
                            throw CollectorFailed(e)
                        }
                    }
                    change?.view?.phase == Phase.PHASE_OVER
                }
                null // an OK end
            } catch (e: CollectorFailed) {
                throw e.cause
            } catch (e: WatchSilentException) {
                channel.enterIdle() // the connection is dead: the next call opens another
                e
            } catch (e: AllFivesException) {
                if (e.endsFollow) throw e
                // Unreachable: the channel's own reconnect backoff (up to two minutes) must
                // not outlast this one's, so the next stream tries a connection at once.
                if (e.code == Status.Code.UNAVAILABLE && e.reason == null) channel.resetConnectBackoff()
                e
            }
            if (latest.view.phase == Phase.PHASE_OVER) break
            val heard = changed || opened.elapsedNow() >= policy.liveness
            val refused = cause is AllFivesException && cause.reason == ErrorReason.TOO_MANY_WATCHES
            failures = if (heard && !refused) 1 else failures + 1
            currentCoroutineContext().ensureActive() // a collector gone: no banner
            onRewatch(cause)
            delay(policy.backoff(failures, okEnd = cause == null))
        }
    }

    /**
     * One Watch stream from [from]'s state id: each message to [onMessage] (a change,
     * or null for a heartbeat or presence) until it returns true, the stream ends (OK:
     * returns), fails ([AllFivesException]) or is silent for [liveness]
     * ([WatchSilentException]). Each change is made a [Table] as it arrives, so that
     * its [Table.receivedAt] does not include the time it waited for the collector.
     */
    private suspend fun watchOnce(
        from: Table,
        me: Seat?,
        liveness: Duration,
        onMessage: suspend (Table?) -> Boolean,
    ): Unit = coroutineScope {
        val request = Allfives.WatchRequest.newBuilder().setState(from.state).setLastStateId(from.view.stateId)
        if (me != null) request.setViewer(me.seat).setCredential(me.credential)
        // The stream's end, OK or not, as its last element: an error ends this stream
        // only, never the scope around it.
        val messages = stub.watch(request.build())
            .map { message ->
                val change = if (message.hasChange()) message.change else null
                Result.success(change?.let { Table(it.state.ifEmpty(from.state), it.view, it.eventsList, catchUp = it.catchUp) })
            }
            .catch { emit(Result.failure(failure(it))) }
            .produceIn(this)
        try {
            while (true) {
                val next = withTimeoutOrNull(liveness) { messages.receiveCatching() }
                    ?: throw WatchSilentException(liveness)
                val table = next.getOrNull()?.getOrThrow() ?: if (next.isClosed) break else null
                if (onMessage(table)) break
            }
        } finally {
            messages.cancel() // ends the call when it is still open
        }
    }

    /** The collector's exception, carried out of the stream's scope unchanged. */
    private class CollectorFailed(override val cause: Throwable) : Exception(cause)

    private fun ByteString.ifEmpty(other: ByteString): ByteString = if (isEmpty) other else this
    // [END kotlin_follow]
}

// [START kotlin_follow_policy]
/**
 * How [AllFivesRepository.follow] keeps a match followed. The server sends a heartbeat
 * on a quiet stream every --watch-heartbeat-secs (15 s by default): a stream that
 * says nothing for [liveness] (three of them) is taken for a dead connection. The wait
 * between streams is a [jitteredBackoff] from [firstBackoff] up to [maxBackoff]: after
 * an error, between half and all of its step (the first 1 to 2 s); after an OK end,
 * anywhere up to its step, so that the devices of a replica that drained do not all
 * come back at once.
 */
data class FollowPolicy(
    val liveness: Duration = 45.seconds,
    val firstBackoff: Duration = 2.seconds,
    val maxBackoff: Duration = 15.seconds,
    val random: Random = Random.Default,
) {
    /** The wait before the next stream, the [failures]-th in a row that brought no change
     * (1 after one that did); [okEnd]: the stream ended with OK. */
    fun backoff(failures: Int, okEnd: Boolean = false): Duration =
        jitteredBackoff(failures, firstBackoff, maxBackoff, random, full = okEnd)
}

/**
 * The wait before try [attempt] + 1: a step of [first] doubled at each try up to [max],
 * and a random part of it (between half and all; [full]: between none and all), so
 * that devices cut off together do not come back together.
 */
fun jitteredBackoff(attempt: Int, first: Duration, max: Duration, random: Random = Random.Default, full: Boolean = false): Duration {
    val step = first * (1L shl (attempt - 1).coerceIn(0, 30)).toDouble()
    val capped = (if (step > max) max else step).toDouble(DurationUnit.MILLISECONDS)
    val lowest = if (full) 0.0 else capped / 2
    return (if (capped > lowest) random.nextDouble(lowest, capped) else capped).milliseconds
}

/**
 * Whether a Watch refusal ends [AllFivesRepository.follow]: a reason that watching again
 * cannot change (the match forgotten, the seat's credential refused or missing, a bot's
 * seat, a damaged or foreign token, a server without a match store, a request it cannot
 * read), or a server without Watch. Anything else, even an INTERNAL without a reason (a
 * proxy's reset stream, a captive portal's page), is tried again: Watch changes nothing.
 */
val AllFivesException.endsFollow: Boolean
    get() = code == Status.Code.UNIMPLEMENTED || reason in setOf(
        ErrorReason.MATCH_FORGOTTEN, ErrorReason.CREDENTIAL_REQUIRED, ErrorReason.CREDENTIAL_INVALID,
        ErrorReason.SEAT_IS_BOT, ErrorReason.STORE_REQUIRED, ErrorReason.TOKEN_MALFORMED,
        ErrorReason.TOKEN_UNKNOWN_KEY, ErrorReason.TOKEN_UNSUPPORTED_VERSION, ErrorReason.TOKEN_INVALID,
        ErrorReason.INVALID_FIELD, ErrorReason.MALFORMED_REQUEST,
    )

/** A Watch stream said nothing, not even a heartbeat, for [silentFor]: the connection is taken for dead. */
class WatchSilentException(val silentFor: Duration) :
    Exception("the stream said nothing, not even a heartbeat, for $silentFor")
// [END kotlin_follow_policy]
