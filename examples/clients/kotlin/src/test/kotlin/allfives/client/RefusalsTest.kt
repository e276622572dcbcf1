package allfives.client

import allfives.v1.Allfives
import allfives.v1.Allfives.BotLevel
import allfives.v1.Allfives.ErrorReason
import com.google.protobuf.ByteString
import io.grpc.Status
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/** Refusals provoked on purpose, each read from ErrorInfo and BadRequest as an app would. */
class RefusalsTest {
    private val repo = Servers.repository

    private fun refused(code: Status.Code, reason: ErrorReason, e: AllFivesException) {
        assertEquals(code, e.code, e.message)
        assertEquals(reason, e.reason, e.message)
        assertEquals(sentence(reason), e.sentence)
    }

    // A dealt match against a bot, seat 0 on turn with a tile to play (a deal can leave
    // it none: it must draw, and the tests below play a legal move).
    private suspend fun againstBot(): Pair<Table, Seat> {
        repeat(50) {
            val (table, me) = repo.newMatch(2, 50, mapOf(1 to BotLevel.BOT_LEVEL_MEDIUM))
            val dealt = repo.deal(table, me)
            if (dealt.view.legalMovesCount > 0) return dealt to me
        }
        error("no deal of 50 left seat 0 a tile to play")
    }

    @Test
    fun `a field out of range is INVALID_FIELD with the field named`() = runBlocking {
        val e = assertThrows<AllFivesException> { repo.newMatch(players = 9, target = 50, bots = emptyMap()) }
        refused(Status.Code.INVALID_ARGUMENT, ErrorReason.INVALID_FIELD, e)
        assertTrue("rules.players" in e.fields) { "BadRequest fields: ${e.fields}" }
    }

    @Test
    fun `an altered token is TOKEN_INVALID on the state field`() = runBlocking {
        val (table, me) = againstBot()
        val bytes = table.state.toByteArray()
        bytes[bytes.size / 2] = (bytes[bytes.size / 2].toInt() xor 1).toByte()
        val e = assertThrows<AllFivesException> { repo.draw(table.copy(state = ByteString.copyFrom(bytes)), me) }
        refused(Status.Code.INVALID_ARGUMENT, ErrorReason.TOKEN_INVALID, e)
        assertTrue("state" in e.fields) { "BadRequest fields: ${e.fields}" }
    }

    @Test
    fun `another credential, none, and the bot seat are PERMISSION_DENIED`() = runBlocking {
        val (table, me) = againstBot()
        val stranger = me.copy(credential = ByteString.copyFrom(ByteArray(16) { 7 }))
        val move = table.view.getLegalMoves(0)
        refused(Status.Code.PERMISSION_DENIED, ErrorReason.CREDENTIAL_INVALID,
            assertThrows { repo.play(table, stranger, move) })
        refused(Status.Code.PERMISSION_DENIED, ErrorReason.CREDENTIAL_REQUIRED,
            assertThrows { repo.score(table.state, me.copy(credential = ByteString.EMPTY)) })
        refused(Status.Code.PERMISSION_DENIED, ErrorReason.SEAT_IS_BOT,
            assertThrows { repo.play(table, me.copy(seat = 1), move) })
    }

    @Test
    fun `moves the rules refuse are FAILED_PRECONDITION`() = runBlocking {
        val (made, me) = repo.newMatch(2, 50, mapOf(1 to BotLevel.BOT_LEVEL_MEDIUM))
        val anyMove = Allfives.LegalMove.newBuilder().setTile(Allfives.Tile.newBuilder().setA(6).setB(6)).build()
        // Before the deal.
        refused(Status.Code.FAILED_PRECONDITION, ErrorReason.WRONG_PHASE,
            assertThrows { repo.play(made, me, anyMove) })
        val table = repo.deal(made, me)
        // A tile the seat does not hold (one it does not have, from the 28).
        val held = table.view.handList.map { minOf(it.a, it.b) to maxOf(it.a, it.b) }.toSet()
        val missing = (0..6).flatMap { a -> (a..6).map { b -> a to b } }.first { it !in held }
        val notHeld = Allfives.LegalMove.newBuilder()
            .setTile(Allfives.Tile.newBuilder().setA(missing.first).setB(missing.second)).build()
        refused(Status.Code.FAILED_PRECONDITION, ErrorReason.TILE_NOT_IN_HAND,
            assertThrows { repo.play(table, me, notHeld) })
        // Claiming a seat already claimed.
        refused(Status.Code.FAILED_PRECONDITION, ErrorReason.WRONG_PHASE,
            assertThrows { repo.claimSeat(table.state, seat = 0) })
    }

    @Test
    fun `an open seat is SEATS_OPEN to deal, and SEAT_TAKEN once claimed`() = runBlocking {
        val (made, me) = repo.newMatch(players = 2, target = 50, bots = emptyMap())
        refused(Status.Code.FAILED_PRECONDITION, ErrorReason.SEATS_OPEN,
            assertThrows { repo.deal(made, me) })
        val (claimed, _) = repo.claimSeat(made.state, seat = 1)
        refused(Status.Code.FAILED_PRECONDITION, ErrorReason.SEAT_TAKEN,
            assertThrows { repo.claimSeat(claimed.state, seat = 1) })
    }

    @Test
    fun `a refusal is not retried, and changes nothing`() = runBlocking {
        val (table, me) = againstBot()
        val e = assertThrows<AllFivesException> { repo.play(table, me.copy(seat = 1), table.view.getLegalMoves(0)) }
        assertNotEquals(true, e.retryable)
        // The token still plays: the refused call did nothing to it.
        val after = repo.play(table, me, table.view.getLegalMoves(0))
        assertEquals(table.view.stateId, after.view.previousStateId)
    }

    @Test
    fun `every reason has its own sentence`() {
        val known = ErrorReason.values().filter {
            it != ErrorReason.UNRECOGNIZED && it != ErrorReason.ERROR_REASON_UNSPECIFIED
        }
        val sentences = known.map(::sentence)
        assertTrue(sentences.all { it.isNotBlank() })
        assertEquals(known.size, sentences.toSet().size) { "two reasons share a sentence" }
        assertTrue(known.none { sentence(it) == sentence(ErrorReason.UNRECOGNIZED) })
    }
}
