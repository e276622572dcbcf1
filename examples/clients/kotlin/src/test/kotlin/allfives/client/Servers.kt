package allfives.client

import org.junit.jupiter.api.Assumptions.assumeTrue

/** The servers .ci/kotlin-client started: -Dallfives.addr, -Dallfives.storeAddr. */
object Servers {
    val addr: String = System.getProperty("allfives.addr").orEmpty().ifEmpty { "127.0.0.1:50051" }

    /** A server with a match store; the tests that need one fail without it (never skipped). */
    val storeAddr: String
        get() = System.getProperty("allfives.storeAddr").orEmpty().also {
            check(it.isNotEmpty()) { "set -Dallfives.storeAddr to a server started with --match-store memory" }
        }

    val repository by lazy { AllFivesRepository(channel(addr)) }
}
