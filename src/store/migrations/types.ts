/** One forward-only migration: applied once, in id order, inside the migration transaction. */
export interface Migration {
  id: number;
  name: string;
  sql: string;
}
