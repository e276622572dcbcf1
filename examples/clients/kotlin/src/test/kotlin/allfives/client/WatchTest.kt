package allfives.client

import allfives.v1.Allfives.Phase
import kotlinx.coroutines.async
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/**
 * Two devices, one seat each, on a server with a match store whose connections age
 * every second: each learns every move, its own and the other's, from its own
 * [AllFivesRepository.follow] flow alone, which watches again from the last state id
 * whenever a stream ends, and completes by itself at the match's end.
 */
class WatchTest {
    /** One device: its own channel and repository, as on a phone of its own. */
    private class Device(val name: String) {
        val repo = AllFivesRepository(channel(Servers.storeAddr))
        var watches = 1 // streams opened: the first, then one for each onRewatch
        var changes = 0

        // [START kotlin_follow_use]
        /** Plays the match as [me] until it is over, from its own follow flow (and deals if [deals]). */
        suspend fun playAlong(start: Table, me: Seat, deals: Boolean): Table {
            var latest = start
            act(start, me, deals)
            repo.follow(start, me, onRewatch = { watches++ }).collect { change ->
                changes++
                latest = change
                act(change, me, deals) // the answer comes back on this flow too
            }
            return latest // the flow completed by itself: the match is over
        }
        // [END kotlin_follow_use]

        private suspend fun act(table: Table, me: Seat, deals: Boolean) {
            val view = table.view
            delay(20) // a person's pace, a little: the match outlasts several connections
            when {
                // The first hand is the test's to deal (below); the host deals the others.
                view.phase == Phase.PHASE_DEALING && deals && view.handNumber > 0 ->
                    repo.deal(table, me)
                view.phase == Phase.PHASE_PLAYING && view.hasTurn() && view.turn == me.seat ->
                    if (view.mustDraw) repo.draw(table, me) else repo.play(table, me, view.getLegalMoves(0))
            }
        }
    }

    @Test
    fun `two devices follow one match on their own follow flows to the same end`() = runBlocking<Unit> {
        val host = Device("host")
        val guest = Device("guest")
        withTimeout(120_000) {
            // The host makes the match with seat 1 open; the guest claims it with a claim key.
            val (made, hostSeat) = host.repo.newMatch(players = 2, target = 100, bots = emptyMap())
            val (claimed, guestSeat) = guest.repo.claimSeat(made.state, seat = 1, name = "Guest")
            val hostEnd = async { host.playAlong(made, hostSeat, deals = true) }
            val guestEnd = async { guest.playAlong(claimed, guestSeat, deals = false) }
            // Dealt once each device has watched again (its first stream ended with its
            // connection, and its follow opened another from the last state id): every
            // follow is shown resuming, however fast the match then goes.
            while (host.watches < 2 || guest.watches < 2) delay(50)
            host.repo.deal(claimed, hostSeat)
            val (a, b) = hostEnd.await() to guestEnd.await()
            assertEquals(Phase.PHASE_OVER, a.view.phase)
            assertEquals(a.view.stateId, b.view.stateId) { "the devices ended on different states" }
            assertEquals(0, a.view.viewer)
            assertEquals(1, b.view.viewer)
        }
        // Connections aged every second: each device watched again at least once, and
        // followed every move after it.
        assertTrue(host.changes > 10 && guest.changes > 10)
        println("watch: the host watched ${host.watches} times (${host.changes} changes), the guest ${guest.watches} (${guest.changes})")
    }
}
