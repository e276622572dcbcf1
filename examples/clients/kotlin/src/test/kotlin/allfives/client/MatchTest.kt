package allfives.client

import allfives.v1.Allfives.BotLevel
import allfives.v1.Allfives.Phase
import allfives.v1.Allfives.SeatKind
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class MatchTest {
    private val repo = Servers.repository

    @Test
    fun `a whole match against the MEDIUM bot`() = runBlocking {
        val (table, me) = repo.newMatch(players = 2, target = 50, bots = mapOf(1 to BotLevel.BOT_LEVEL_MEDIUM))
        assertEquals(16, me.credential.size())
        assertEquals(SeatKind.SEAT_KIND_BOT, table.view.getSeats(1).kind)
        val end = repo.playToEnd(table, mapOf(0 to me))
        checkEnd(end, target = 50)
    }

    @Test
    fun `a partnership of four, seats 0 and 2 here, the EASY and HARD bots against them`() = runBlocking {
        val (made, me) = repo.newMatch(
            players = 4, target = 50, partnership = true,
            bots = mapOf(1 to BotLevel.BOT_LEVEL_EASY, 3 to BotLevel.BOT_LEVEL_HARD),
        )
        assertEquals(SeatKind.SEAT_KIND_OPEN, made.view.getSeats(2).kind)
        val (claimed, partner) = repo.claimSeat(made.state, seat = 2, name = "Partner")
        assertEquals("Partner", claimed.view.getSeats(2).displayName)
        val end = repo.playToEnd(claimed, mapOf(0 to me, 2 to partner))
        checkEnd(end, target = 50)
        // Partners score together: side 0 is seats 0 and 2.
        assertEquals(listOf(0, 2), end.view.getScores(0).seatsList)
    }

    /** The match is over, its winner at or past the target, and Score's sheet agrees. */
    private suspend fun checkEnd(end: Table, target: Int) {
        assertEquals(Phase.PHASE_OVER, end.view.phase)
        assertTrue(end.view.hasWinnerSide())
        val winner = end.view.getScores(end.view.winnerSide)
        assertTrue(winner.score >= target) { "the winner has ${winner.score}, under $target" }
        val sheet = repo.score(end.state, null).sheet
        assertEquals(end.view.winnerSide, sheet.winnerSide)
        val last = sheet.rowsList.last()
        for (side in end.view.scoresList) {
            assertEquals(side.score, last.sidesList.first { it.side == side.side }.total)
        }
    }
}
