/**
 * The current turn of the event loop, as a number: the same for everything that runs before the
 * next check phase, one more after it. For freshness checks of files (a stat each) asked by every
 * compat request: a check kept with the turn it was made in holds for the rest of that turn, so
 * requests handled in the same turn share one stat, as if they had all asked at its first ask; a
 * request of a later turn checks again, so an edit made before its turn is seen (issue 17 item 3).
 * One `setImmediate` a turn in which anything asked, none in a turn nobody asks.
 * @module
 */

let turn = 0;
let scheduled = false;

const nextTurn = () => {
  scheduled = false;
  turn++;
};

/** The current turn's number (it moves on at the next check phase). */
export function currentTurn(): number {
  if (!scheduled) {
    scheduled = true;
    setImmediate(nextTurn);
  }
  return turn;
}
