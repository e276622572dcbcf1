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
import com.google.rpc.ErrorInfo
import io.grpc.CallOptions
import io.grpc.Channel
import io.grpc.ClientCall
import io.grpc.ClientInterceptor
import io.grpc.ForwardingClientCall
import io.grpc.ForwardingClientCallListener
import io.grpc.Metadata
import io.grpc.MethodDescriptor
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.CopyOnWriteArrayList
import kotlin.random.Random
import kotlin.time.Duration
import kotlin.coroutines.cancellation.CancellationException
import kotlin.time.Duration.Companion.milliseconds
import kotlin.time.Duration.Companion.seconds
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitCancellation
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.flow
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.update
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
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
 * a stream mid-way ends it with the CancellationException only, and the server's
 * stream with it. No test times anything: every wait is bounded (a test fails only when
 * it waits a minute or more), no assertion depends on how fast the machine is, and the
 * waits between streams are read from the policy's random source, not measured. The
 * follower runs on Dispatchers.Default and the server processes are started and killed
 * on Dispatchers.IO, so that nothing blocks its thread; the liveness bounds are seconds,
 * and no stream the test keeps alive is ever quiet that long.
 */
class FollowTest {
    private val fast = FollowPolicy(liveness = 30.seconds, firstBackoff = 20.milliseconds, maxBackoff = 200.milliseconds)

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
        val causes = CopyOnWriteArrayList<Throwable?>()
        val flow: Flow<Table> = repo.follow(start, me, policy) { causes += it }

        /** On Dispatchers.Default: the test's own thread blocks on processes. */
        fun launchIn(scope: kotlinx.coroutines.CoroutineScope): Deferred<Unit> = scope.async(Dispatchers.Default) {
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
            withContext(Dispatchers.IO) { first.kill() } // no draining: the stream breaks
            restarted = withContext(Dispatchers.IO) { ServerProcess.start(*redis, keys = keys) }
            proxy.upstream = restarted.port
            while (!mover.over) mover.step()
            withTimeout(120_000) { following.await() } // it ends by itself at the match's end
            nothingMissedOrDoubled(start, follower.seen, mover.made)
            // Cut by the kill (UNAVAILABLE, or silence if the restart took long): which, the
            // machine's speed decides; that it went on, every change once, is what matters.
            assertTrue(follower.causes.isNotEmpty()) { "the follow was not cut by the kill" }
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
            // (A spurious expiry before the silence would only watch again: nothing asserted on it.)
            val follower = Follower(proxy.address, fast.copy(liveness = 4.seconds), start, mover.seats.getValue(0))
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
        val cancelled = MutableStateFlow(0) // streams the client cancelled

        override fun watch(request: Allfives.WatchRequest): Flow<WatchResponse> = flow {
            requests += request
            try {
                scripts[minOf(requests.size, scripts.size) - 1]()
            } catch (e: CancellationException) {
                cancelled.update { it + 1 }
                throw e
            }
        }

        override suspend fun score(request: Allfives.ScoreRequest): Allfives.ScoreResponse {
            scores.value++
            throw Status.UNAVAILABLE.withDescription("scripted").asException()
        }
    }

    private suspend fun <T> inProcess(
        service: AllFivesServiceCoroutineImplBase,
        interceptor: ClientInterceptor? = null,
        body: suspend (AllFivesRepository) -> T,
    ): T {
        val name = InProcessServerBuilder.generateName()
        val server: Server = InProcessServerBuilder.forName(name).addService(service).build().start()
        val channel = InProcessChannelBuilder.forName(name).apply { if (interceptor != null) intercept(interceptor) }.build()
        try {
            return body(AllFivesRepository(channel, attempts = 1_000))
        } finally {
            channel.shutdownNow()
            server.shutdownNow()
        }
    }

    private val detailsKey = Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER)

    /** A refusal as the server sends it: [code], and an ErrorInfo with [reason]. */
    private fun refusal(code: Status, reason: String): Throwable {
        val info = ErrorInfo.newBuilder().setDomain(AllFivesException.DOMAIN).setReason(reason).build()
        val details = com.google.rpc.Status.newBuilder().setCode(code.code.value()).addDetails(
            com.google.protobuf.Any.newBuilder().setTypeUrl("type.googleapis.com/google.rpc.ErrorInfo").setValue(info.toByteString()),
        ).build()
        val trailers = Metadata().apply { put(detailsKey, details.toByteArray()) }
        return code.withDescription("scripted").asException(trailers)
    }

    /** A random source that records each wait's window [from, until) in ms and waits the least of it. */
    private class Windows : Random() {
        val seen = CopyOnWriteArrayList<Pair<Double, Double>>()
        override fun nextBits(bitCount: Int): Int = Random.Default.nextBits(bitCount)
        override fun nextDouble(from: Double, until: Double): Double {
            seen += from to until
            return from
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
        var connected = 0
        // Only the third stream is ever quiet: the liveness bound, seconds, expires there only.
        val seen = inProcess(service) { repo ->
            withTimeout(60_000) {
                repo.follow(start, me, fast.copy(liveness = 5.seconds), onConnected = { connected++ }) { causes += it }.toList()
            }
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
        assertEquals(2, connected) // the streams that said something: the second and the fourth
    }

    @Test
    fun `a follow of a match already over ends at once, and a final refusal ends it with its error`() = runBlocking<Unit> {
        val service = Scripted(listOf({ throw refusal(Status.FAILED_PRECONDITION, "STORE_REQUIRED") }))
        inProcess(service) { repo ->
            val over = Table(start.state, view("s0", "", Phase.PHASE_OVER))
            assertEquals(emptyList<Table>(), repo.follow(over, me, fast).toList())
            assertEquals(0, service.requests.size)
            val refused = assertThrows<AllFivesException> { withTimeout(60_000) { repo.follow(start, me, fast).toList() } }
            assertEquals(Status.Code.FAILED_PRECONDITION, refused.code)
            assertEquals(Allfives.ErrorReason.STORE_REQUIRED, refused.reason)
            assertEquals(1, service.requests.size) // not retried
        }
    }

    @Test
    fun `an INTERNAL without a reason is watched again, and MATCH_FORGOTTEN ends the follow`() = runBlocking<Unit> {
        val service = Scripted(
            listOf(
                { throw Status.INTERNAL.withDescription("RST_STREAM from a proxy").asException() },
                { emit(heartbeat); throw refusal(Status.NOT_FOUND, "MATCH_FORGOTTEN") },
            ),
        )
        val causes = mutableListOf<Throwable?>()
        inProcess(service) { repo ->
            val refused = assertThrows<AllFivesException> { withTimeout(60_000) { repo.follow(start, me, fast) { causes += it }.toList() } }
            assertEquals(Allfives.ErrorReason.MATCH_FORGOTTEN, refused.reason)
        }
        assertEquals(2, service.requests.size)
        assertEquals(1, causes.size) { "$causes" }
        assertEquals(Status.Code.INTERNAL, (causes[0] as AllFivesException).code)
    }

    @Test
    fun `TOO_MANY_WATCHES is watched again with a growing backoff, which only a change resets, and an OK end waits a full jitter`() = runBlocking<Unit> {
        val tooMany = refusal(Status.RESOURCE_EXHAUSTED, "TOO_MANY_WATCHES")
        val service = Scripted(
            listOf(
                { emit(heartbeat); throw tooMany }, // the server's first message, then the refusal
                { emit(heartbeat); throw tooMany },
                { emit(heartbeat); throw tooMany },
                { emit(heartbeat); emit(change("s1", "s0")) }, // a change, then an OK end
                { emit(heartbeat) }, // an OK end with no change
                { emit(change("s2", "s1", Phase.PHASE_OVER)) },
            ),
        )
        val windows = Windows()
        val seen = inProcess(service) { repo ->
            val policy = FollowPolicy(liveness = 30.seconds, firstBackoff = 10.milliseconds, maxBackoff = 1.seconds, random = windows)
            withTimeout(60_000) { repo.follow(start, me, policy).toList() }
        }
        assertEquals(listOf("s1", "s2"), seen.map { it.view.stateId.toStringUtf8() })
        assertEquals(
            listOf(5.0 to 10.0, 10.0 to 20.0, 20.0 to 40.0, 0.0 to 10.0, 0.0 to 20.0),
            windows.seen.toList(),
        )
    }

    /**
     * Ends the first call at its first message as an interceptor's cancel does: its
     * listener closed with CANCELLED whose cause is a CancellationException (which
     * grpc-kotlin ends the flow with). The close is told to the listener here, before the
     * call is cancelled and whatever the transport says after is dropped, so that no
     * close of the server's can come first.
     */
    private class CancelFirst : ClientInterceptor {
        private val done = AtomicBoolean(false)
        override fun <Q, A> interceptCall(method: MethodDescriptor<Q, A>, options: CallOptions, next: Channel): ClientCall<Q, A> =
            object : ForwardingClientCall.SimpleForwardingClientCall<Q, A>(next.newCall(method, options)) {
                override fun start(listener: Listener<A>, headers: Metadata) {
                    val call = this
                    var closed = false
                    super.start(
                        object : ForwardingClientCallListener.SimpleForwardingClientCallListener<A>(listener) {
                            override fun onMessage(message: A) {
                                if (closed) return
                                super.onMessage(message)
                                if (done.compareAndSet(false, true)) {
                                    closed = true
                                    val cause = CancellationException("an interceptor's")
                                    super.onClose(Status.CANCELLED.withDescription("an interceptor's").withCause(cause), Metadata())
                                    call.cancel("an interceptor's", cause)
                                }
                            }

                            override fun onClose(status: Status, trailers: Metadata) {
                                if (!closed) super.onClose(status, trailers)
                            }
                        },
                        headers,
                    )
                }
            }
    }

    @Test
    fun `a CancellationException from the call, not the collector's scope, is CANCELLED and watched again`() = runBlocking<Unit> {
        val service = Scripted(listOf({ emit(heartbeat); awaitCancellation() }, { emit(change("s1", "s0", Phase.PHASE_OVER)) }))
        val causes = mutableListOf<Throwable?>()
        val seen = inProcess(service, CancelFirst()) { repo -> withTimeout(60_000) { repo.follow(start, me, fast) { causes += it }.toList() } }
        assertEquals(listOf("s1"), seen.map { it.view.stateId.toStringUtf8() })
        assertEquals(1, causes.size) { "$causes" }
        assertEquals(Status.Code.CANCELLED, (causes[0] as AllFivesException).code) { causes[0]!!.cause!!.stackTraceToString() }
        assertEquals(2, service.requests.size)
    }

    @Test
    fun `the collector's exception passes through unchanged, not watched again, and the stream is cancelled`() = runBlocking<Unit> {
        val service = Scripted(listOf({ emit(change("s1", "s0")); awaitCancellation() }))
        val boom = IllegalStateException("the collector's own")
        inProcess(service) { repo ->
            val thrown = assertThrows<IllegalStateException> { withTimeout(60_000) { repo.follow(start, me, fast).collect { throw boom } } }
            // The same exception (or, with coroutines' stack trace recovery under -ea, its copy
            // whose cause it is): never an AllFivesException, never wrapped.
            assertTrue(thrown === boom || thrown.cause === boom) { "$thrown" }
            withTimeout(60_000) { service.cancelled.first { it == 1 } }
        }
        assertEquals(1, service.requests.size)
    }

    @Test
    fun `first() and take(1) end the follow after one change, cancelling its stream`() = runBlocking<Unit> {
        val service = Scripted(listOf({ emit(heartbeat); emit(change("s1", "s0")); awaitCancellation() }))
        inProcess(service) { repo ->
            assertEquals("s1", withTimeout(60_000) { repo.follow(start, me, fast).first() }.view.stateId.toStringUtf8())
            withTimeout(60_000) { service.cancelled.first { it == 1 } }
            assertEquals(listOf("s1"), withTimeout(60_000) { repo.follow(start, me, fast).take(1).toList() }.map { it.view.stateId.toStringUtf8() })
            withTimeout(60_000) { service.cancelled.first { it == 2 } }
        }
        assertEquals(2, service.requests.size)
    }

    @Test
    fun `backoff is jittered within half to all of its step, and capped`() {
        val policy = FollowPolicy(firstBackoff = 100.milliseconds, maxBackoff = 1.seconds)
        repeat(200) {
            val first = policy.backoff(1)
            assertTrue(first >= 50.milliseconds && first <= 100.milliseconds) { "$first" }
            val late = policy.backoff(30)
            assertTrue(late >= 500.milliseconds && late <= 1.seconds) { "$late" }
            val ok = policy.backoff(1, okEnd = true) // an OK end: anywhere up to the step
            assertTrue(ok >= Duration.ZERO && ok <= 100.milliseconds) { "$ok" }
        }
        assertTrue((1..50).map { policy.backoff(1) }.toSet().size > 1) { "no jitter" }
    }

    @Test
    fun `cancelling mid-stream ends a follow and a watch with the cancellation, not an error, and the server's stream`() = runBlocking<Unit> {
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
                withTimeout(60_000) { service.cancelled.first { it == service.requests.size } } // the server saw it end
            }
            assertEquals(2, service.requests.size)
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
