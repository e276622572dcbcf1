package allfives.client

import allfives.v1.Allfives.Phase

// [START kotlin_game_loop]
/**
 * Plays a match to its end for the seats this device holds: deals between hands, and
 * for the seat on turn (the server's bots have moved inside the previous call) looks
 * at its own view, then draws if it must, else plays the first legal move the server
 * lists. Returns the last table.
 */
suspend fun AllFivesRepository.playToEnd(start: Table, seats: Map<Int, Seat>): Table {
    var table = start
    while (table.view.phase != Phase.PHASE_OVER) {
        table = if (table.view.phase == Phase.PHASE_DEALING) {
            deal(table, seats.values.first())
        } else {
            val me = seats.getValue(table.view.turn)
            val mine = if (table.view.hasViewer() && table.view.viewer == me.seat) table.view else score(table.state, me).view
            if (mine.mustDraw) draw(table, me) else play(table, me, mine.getLegalMoves(0))
        }
    }
    return table
}
// [END kotlin_game_loop]
