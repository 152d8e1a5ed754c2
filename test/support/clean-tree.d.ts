export declare const OWNED_BY_TOOLING: string[];
export declare function treeState(dir: string): string[] | null;
export declare function treeChanges(before: string[], after: string[]): string[];
export declare function ledgersInUse(dir: string, ...states: string[][]): Promise<string[]>;
export declare function withoutLedgers(state: string[], ledgers: string[]): string[];
export declare function runChanges(before: string[], after: string[], ledgersAtStart: string[]): string[];
