export declare const OWNED_BY_TOOLING: string[];
export declare function treeState(dir: string): string[] | null;
export declare function treeChanges(before: string[], after: string[]): string[];
