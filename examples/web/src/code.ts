// Invite codes as people type them (CreateInviteCode's code, read out to a friend).

/**
 * A code as typed, as the server reads it: any case, without the hyphens and spaces
 * (a phone's keyboard may put a dash of its own, or a space of any width), O as 0, I
 * and L as 1 (Crockford's base 32).
 */
export function normaliseCode(typed: string): string {
  return typed
    .toUpperCase()
    .replace(/[\s\-\u2010-\u2015\u2212]/g, "")
    .replace(/O/g, "0")
    .replace(/[IL]/g, "1");
}
