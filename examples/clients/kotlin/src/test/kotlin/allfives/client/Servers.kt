package allfives.client

import java.io.File
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.security.SecureRandom
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.TimeUnit

/** The servers the quick start's section 6 starts: -Dallfives.addr, -Dallfives.storeAddr. */
object Servers {
    val addr: String = System.getProperty("allfives.addr").orEmpty().ifEmpty { "127.0.0.1:50051" }

    /** A server with a match store; the tests that need one fail without it (never skipped). */
    val storeAddr: String
        get() = required("allfives.storeAddr", "a server started with --match-store memory")

    /** The server binary, for the tests that start (and kill) servers of their own. */
    val bin: String get() = required("allfives.bin", "the allfives server binary")

    /** A Redis the tests' replicas share as their match store (redis://127.0.0.1:PORT). */
    val redisUrl: String get() = required("allfives.redisUrl", "a running redis-server's redis://127.0.0.1:PORT")

    private fun required(name: String, what: String): String =
        System.getProperty(name).orEmpty().also { check(it.isNotEmpty()) { "set -D$name to $what" } }

    val repository by lazy { AllFivesRepository(channel(addr)) }
}

/** A server this test started: its own port, its log in a file, killed at the end. */
class ServerProcess private constructor(private val process: Process, val port: Int, private val log: File) : AutoCloseable {
    val address get() = "127.0.0.1:$port"

    /** SIGKILL: gone at once, without draining its streams (a crashed replica). */
    fun kill() {
        process.destroyForcibly()
        process.waitFor(30, TimeUnit.SECONDS)
    }

    override fun close() {
        kill()
        log.delete()
    }

    companion object {
        /** A key ring of one random key, in the servers' --keys format. */
        fun randomKeys(): String =
            "1:" + ByteArray(32).also(SecureRandom()::nextBytes).joinToString("") { "%02x".format(it) }

        private val serving = Regex("""serving addr=127\.0\.0\.1:(\d+)""")

        /**
         * Starts the server binary with [args] on a port the system picks, with the token
         * keys [keys] (replicas of one deployment share them; null: the server's random
         * key); waits (30 s at most) for it to serve.
         */
        fun start(vararg args: String, keys: String? = null): ServerProcess {
            val log = File.createTempFile("allfives-server", ".log")
            val builder = ProcessBuilder(
                listOf(Servers.bin, "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--shutdown-delay-ms", "0") + args,
            ).redirectErrorStream(true).redirectOutput(log)
            if (keys != null) builder.environment()["ALLFIVES_KEYS"] = keys
            val process = builder.start()
            repeat(300) {
                serving.find(log.readText())?.let { return ServerProcess(process, it.groupValues[1].toInt(), log) }
                check(process.isAlive) { "the server exited at start: ${log.readText().takeLast(2000)}" }
                Thread.sleep(100)
            }
            process.destroyForcibly()
            error("the server did not say it was serving within 30 s: ${log.readText().takeLast(2000)}")
        }
    }
}

/**
 * A TCP proxy on 127.0.0.1 that the test steers: it forwards each connection to
 * [upstream] (changed for the connections that come after), and [silence] makes every
 * connection open now stop forwarding in both directions while staying open (a
 * half-open mobile network: nothing arrives, nothing fails). A connection whose other
 * side closes is closed.
 */
class TcpProxy(@Volatile var upstream: Int) : AutoCloseable {
    private val listener = ServerSocket(0, 50, InetAddress.getLoopbackAddress())
    val address = "127.0.0.1:${listener.localPort}"

    private class Link(val client: Socket, val server: Socket) {
        @Volatile var silent = false
        fun close() {
            runCatching { client.close() }
            runCatching { server.close() }
        }
    }

    private val links = CopyOnWriteArrayList<Link>()

    init {
        thread {
            while (!listener.isClosed) {
                val client = runCatching { listener.accept() }.getOrNull() ?: break
                val server = runCatching { Socket(InetAddress.getLoopbackAddress(), upstream) }.getOrNull()
                if (server == null) {
                    client.close()
                    continue
                }
                val link = Link(client, server)
                links += link
                thread { pump(link, link.client, link.server) }
                thread { pump(link, link.server, link.client) }
            }
        }
    }

    /** Every connection open now goes silent; those that come after forward as before. */
    fun silence() = links.forEach { it.silent = true }

    private fun pump(link: Link, from: Socket, to: Socket) {
        val buffer = ByteArray(16 * 1024)
        try {
            val input = from.getInputStream()
            val output = to.getOutputStream()
            while (true) {
                val n = input.read(buffer)
                if (n < 0) break
                if (!link.silent) output.write(buffer, 0, n) // silent: read and dropped
            }
        } catch (_: Exception) {
            // either side closed
        }
        if (!link.silent) link.close() // a silent link stays open: only the test's end closes it
    }

    override fun close() {
        runCatching { listener.close() }
        links.forEach { it.close() }
    }

    private fun thread(body: () -> Unit) = Thread(body).apply { isDaemon = true; start() }
}
