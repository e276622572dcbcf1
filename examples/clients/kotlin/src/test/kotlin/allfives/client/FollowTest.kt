package allfives.client

import allfives.v1.AllFivesServiceGrpcKt.AllFivesServiceCoroutineImplBase
import allfives.v1.Allfives
import allfives.v1.Allfives.GameView
import allfives.v1.Allfives.Phase
import allfives.v1.Allfives.WatchResponse
import com.google.protobuf.ByteString
import io.grpc.ManagedChannel
import io.grpc.Server
import io.grpc.Status
import io.grpc.inprocess.InProcessChannelBuilder
import io.grpc.inprocess.InProcessServerBuilder
import java.util.concurrent.ConcurrentLinkedQueue
import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * AllFivesRepository.follow, the flow a view model collects: against servers of its
 * own (a replica killed and another started on one Redis; a connection gone silent
 * behind a proxy), and against a server in this process that scripts each stream
 * (an OK end, UNAVAILABLE, silence, the match's end, a refusal). Cancelling a call or
 * a stream mid-way ends it with the CancellationException only. No test times
 * anything: every wait is bounded, and the liveness bound is set small.
 */
class FollowTest {
    private val fast = FollowPolicy(liveness = 2.seconds, firstBackoff = 20.milliseconds, maxBackoff = 200.milliseconds)

    // --- Against real servers. ---------------------------------------------------------

    /** One device that moves for both seats of a two-human match, straight to its server. */
    private class Mover(address: String) {
        val channel: ManagedChannel = channel(address)
        val repo = AllFivesRepository(channel)
        val made = mutableListOf<ByteString>() // every state id, in order
        lateinit var table: Table
        lateinit var seats: Map<Int, Seat>

        suspend fun start(): Table {
            val (created, host) = repo.newMatch(players = 2, target = 100, bots = emptyMap())
            val (claimed, guest) = repo.claimSeat(created.state, seat = 1, name = "Guest")
            table = claimed
            seats = mapOf(0 to host, 1 to guest)
            made += claimed.view.stateId
            return claimed
        }

        val over get() = table.view.phase == Phase.PHASE_OVER

        /** One deal, play or draw (as playToEnd does it). */
        suspend fun step() {
            table = if (table.view.phase == Phase.PHASE_DEALING) {
                repo.deal(table, seats.getValue(0))
            } else {
                val me = seats.getValue(table.view.turn)
                val mine = if (table.view.hasViewer() && table.view.viewer == me.seat) table.view else repo.score(table.state, me).view
                if (mine.mustDraw) repo.draw(table, me) else repo.play(table, me, mine.getLegalMoves(0))
            }
            made += table.view.stateId
        }
    }

    /** A device following the match through [address] as seat 0, recording what it is told. */
    private class Follower(address: String, policy: FollowPolicy, start: Table, me: Seat) {
        val channel: ManagedChannel = channel(address)
        val repo = AllFivesRepository(channel)
        val seen = mutableListOf<Table>()
        val last = MutableStateFlow(start.view.stateId)
        val causes = mutableListOf<Throwable?>()
        val flow: Flow<Table> = repo.follow(start, me, policy) { causes += it }

        fun launchIn(scope: kotlinx.coroutines.CoroutineScope): Deferred<Unit> = scope.async {
            flow.collect {
                seen += it
                last.value = it.view.stateId
            }
        }

        /** Waits (60 s at most) until the follower has seen [id]. */
        suspend fun saw(id: ByteString) = withTimeout(60_000) { last.first { it == id } }
    }

    /** Every change came once, in order, each after the one before it or a catch-up, to the match's end. */
    private fun nothingMissedOrDoubled(start: Table, seen: List<Table>, made: List<ByteString>) {
        val ids = seen.map { it.view.stateId }
        assertEquals(ids.size, ids.toSet().size) { "a change came twice" }
        var previous = start.view.stateId
        var at = made.indexOf(previous)
        for (t in seen) {
            assertTrue(t.catchUp || t.view.previousStateId == previous) { "a change was missed before ${made.indexOf(t.view.stateId)}" }
            val i = made.indexOf(t.view.stateId)
            assertTrue(i > at) { "change $i came after change $at" }
            at = i
            previous = t.view.stateId
        }
        assertEquals(made.last(), previous) { "the follow did not end on the last state" }
        assertEquals(Phase.PHASE_OVER, seen.last().view.phase)
    }

    @Test
    fun `a follow resumes on a restarted replica after its own is killed mid-match, missing and doubling nothing`() = runBlocking<Unit> {
        // Replicas of one deployment: one Redis, one key ring.
        val redis = arrayOf("--match-store", "redis", "--match-store-url", Servers.redisUrl)
        val keys = ServerProcess.randomKeys()
        val first = ServerProcess.start(*redis, keys = keys)
        val other = ServerProcess.start(*redis, keys = keys) // the mover's: the match goes on while the follower's is down
        var restarted: ServerProcess? = null
        val proxy = TcpProxy(first.port)
        try {
            val mover = Mover(other.address)
            val start = mover.start()
            val follower = Follower(proxy.address, fast, start, mover.seats.getValue(0))
            val following = follower.launchIn(this)
            repeat(10) { mover.step() }
            follower.saw(mover.made.last()) // its stream is open on the first replica
            first.kill() // no draining: the stream breaks
            restarted = ServerProcess.start(*redis, keys = keys)
            proxy.upstream = restarted.port
            while (!mover.over) mover.step()
            withTimeout(120_000) { following.await() } // it ends by itself at the match's end
            nothingMissedOrDoubled(start, follower.seen, mover.made)
            assertTrue(follower.causes.any { it is AllFivesException && it.code == Status.Code.UNAVAILABLE }) {
                "the follow was not cut by the kill: ${follower.causes}"
            }
            println("follow: ${follower.seen.size} changes of ${mover.made.size - 1}, watched again after ${follower.causes}")
            follower.channel.shutdownNow()
            mover.channel.shutdownNow()
        } finally {
            proxy.close()
            restarted?.close()
            first.close()
            other.close()
        }
    }

    @Test
    fun `a connection gone silent is dropped after the liveness bound, and the follow goes on`() = runBlocking<Unit> {
        val server = ServerProcess.start("--match-store", "memory", "--watch-heartbeat-secs", "1")
        val proxy = TcpProxy(server.port)
        try {
            val mover = Mover(server.address)
            val start = mover.start()
            // A heartbeat every second; three missed: the stream is taken for dead.
            val follower = Follower(proxy.address, fast.copy(liveness = 3.seconds), start, mover.seats.getValue(0))
            val following = follower.launchIn(this)
            repeat(5) { mover.step() }
            follower.saw(mover.made.last())
            val before = follower.causes.size
            proxy.silence() // the follower's connection stays open, and nothing arrives
            repeat(5) { mover.step() }
            follower.saw(mover.made.last()) // told once the silence was noticed, on a new connection
            assertTrue(follower.causes.drop(before).any { it is WatchSilentException }) { "causes: ${follower.causes}" }
            while (!mover.over) mover.step()
            withTimeout(120_000) { following.await() }
            nothingMissedOrDoubled(start, follower.seen, mover.made)
            follower.channel.shutdownNow()
            mover.channel.shutdownNow()
        } finally {
            proxy.close()
            server.close()
        }
    }

    // --- Against a server in this process that scripts each stream. -----------------

    private fun view(id: String, previous: String, phase: Phase = Phase.PHASE_PLAYING): GameView =
        GameView.newBuilder().setStateId(ByteString.copyFromUtf8(id)).setPreviousStateId(ByteString.copyFromUtf8(previous))
            .setPhase(phase).build()

    private fun change(id: String, previous: String, phase: Phase = Phase.PHASE_PLAYING): WatchResponse =
        WatchResponse.newBuilder().setChange(
            Allfives.WatchChange.newBuilder().setState(ByteString.copyFromUtf8("token-$id")).setView(view(id, previous, phase)),
        ).build()

    private val heartbeat: WatchResponse = WatchResponse.newBuilder().setHeartbeat(Allfives.Heartbeat.getDefaultInstance()).build()

    private val start = Table(ByteString.copyFromUtf8("token-s0"), view("s0", ""))
    private val me = Seat(0, ByteString.copyFromUtf8("credential"))

    /** A server whose n-th Watch call streams scripts[n] (the last one again after the end). */
    private class Scripted(val scripts: List<suspend kotlinx.coroutines.flow.FlowCollector<WatchResponse>.() -> Unit>) :
        AllFivesServiceCoroutineImplBase() {
        val requests = ConcurrentLinkedQueue<Allfives.WatchRequest>()
        val scores = MutableStateFlow(0)

        override fun watch(request: Allfives.WatchRequest): Flow<WatchResponse> = flow {
            requests += request
            scripts[minOf(requests.size, scripts.size) - 1]()
        }

        override suspend fun score(request: Allfives.ScoreRequest): Allfives.ScoreResponse {
            scores.value++
            throw Status.UNAVAILABLE.withDescription("scripted").asException()
        }
    }

    private suspend fun <T> inProcess(service: AllFivesServiceCoroutineImplBase, body: suspend (AllFivesRepository) -> T): T {
        val name = InProcessServerBuilder.generateName()
        val server: Server = InProcessServerBuilder.forName(name).addService(service).build().start()
        val channel = InProcessChannelBuilder.forName(name).build()
        try {
            return body(AllFivesRepository(channel, attempts = 1_000))
        } finally {
            channel.shutdownNow()
            server.shutdownNow()
        }
    }

    @Test
    fun `a follow watches again from the last state id after an error, an OK end and silence, and ends with the match`() = runBlocking<Unit> {
        val service = Scripted(
            listOf(
                { throw Status.UNAVAILABLE.asException() }, // the network
                { emit(heartbeat); emit(change("s1", "s0")) }, // then an OK end (the connection aged)
                { awaitCancellation() }, // silence: not even a heartbeat
                { emit(change("s2", "s1")); emit(change("s3", "s2", Phase.PHASE_OVER)); awaitCancellation() },
            ),
        )
        val causes = mutableListOf<Throwable?>()
        val seen = inProcess(service) { repo ->
            withTimeout(60_000) { repo.follow(start, me, fast.copy(liveness = 300.milliseconds)) { causes += it }.toList() }
        }
        // It ended by itself after the match's last change, with the stream still open.
        assertEquals(listOf("s1", "s2", "s3"), seen.map { it.view.stateId.toStringUtf8() })
        assertEquals("token-s3", seen.last().state.toStringUtf8())
        assertEquals(listOf("s0", "s0", "s1", "s1"), service.requests.map { it.lastStateId.toStringUtf8() })
        assertEquals(listOf("token-s0", "token-s0", "token-s1", "token-s1"), service.requests.map { it.state.toStringUtf8() })
        assertTrue(service.requests.all { it.viewer == 0 && it.credential == me.credential })
        assertEquals(3, causes.size) { "$causes" }
        assertEquals(Status.Code.UNAVAILABLE, (causes[0] as AllFivesException).code)
        assertEquals(null, causes[1])
        assertTrue(causes[2] is WatchSilentException)
    }

    @Test
    fun `a follow of a match already over ends at once, and a refusal ends it with its error`() = runBlocking<Unit> {
        val service = Scripted(listOf({ throw Status.FAILED_PRECONDITION.withDescription("no store").asException() }))
        inProcess(service) { repo ->
            val over = Table(start.state, view("s0", "", Phase.PHASE_OVER))
            assertEquals(emptyList<Table>(), repo.follow(over, me, fast).toList())
            assertEquals(0, service.requests.size)
            val refused = assertThrows<AllFivesException> { withTimeout(60_000) { repo.follow(start, me, fast).toList() } }
            assertEquals(Status.Code.FAILED_PRECONDITION, refused.code)
            assertEquals(1, service.requests.size) // not retried
        }
    }

    @Test
    fun `backoff is jittered within half to all of its step, and capped`() {
        val policy = FollowPolicy(firstBackoff = 100.milliseconds, maxBackoff = 1.seconds)
        repeat(200) {
            val first = policy.backoff(1)
            assertTrue(first >= 50.milliseconds && first <= 100.milliseconds) { "$first" }
            val late = policy.backoff(30)
            assertTrue(late >= 500.milliseconds && late <= 1.seconds) { "$late" }
        }
        assertTrue((1..50).map { policy.backoff(1) }.toSet().size > 1) { "no jitter" }
    }

    @Test
    fun `cancelling mid-stream ends a follow and a watch with the cancellation, not an error`() = runBlocking<Unit> {
        val service = Scripted(listOf({ emit(change("s1", "s0")); awaitCancellation() }))
        inProcess(service) { repo ->
            for (flow in listOf(repo.follow(start, me, fast), repo.watch(start.state, me, start.view.stateId))) {
                val first = CompletableDeferred<Unit>()
                var thrown: Throwable? = null
                val job = launch {
                    try {
                        flow.collect { first.complete(Unit) }
                    } catch (t: Throwable) {
                        thrown = t
                        throw t
                    }
                }
                withTimeout(60_000) { first.await() }
                job.cancelAndJoin()
                assertTrue(thrown is CancellationException && thrown !is AllFivesException) { "the stream ended with $thrown" }
            }
        }
    }

    @Test
    fun `cancelling mid-call, between its retries, ends it with the cancellation, not an error`() = runBlocking<Unit> {
        val service = Scripted(listOf({}))
        inProcess(service) { repo ->
            var thrown: Throwable? = null
            val job = launch {
                try {
                    repo.score(start.state, me) // UNAVAILABLE every time: retried, with backoff
                } catch (t: Throwable) {
                    thrown = t
                    throw t
                }
            }
            withTimeout(60_000) { service.scores.first { it >= 2 } }
            job.cancelAndJoin()
            assertTrue(thrown is CancellationException && thrown !is AllFivesException) { "the call ended with $thrown" }
        }
    }
}
