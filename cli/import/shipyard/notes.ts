/** Reasons the report gives in several places, worded once. */

export const NOT_NEEDED = (what: string) => `not needed: ${what}`;
