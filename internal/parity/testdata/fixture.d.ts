/* A small declaration file with the constructs sdk.d.ts uses. */
import type { Foo } from './foo';
export declare type Options = {
    /** A comment with a } brace and a ; semicolon. */
    model?: string;
    'quoted-name': number;
    readonly fixed: boolean;
    callback?: (input: { a: string }, opts: Bar<Baz>) => Promise<void>;
    method(x: string): Promise<Record<string, unknown[]>>;
    tools?: string[] | {
        type: 'preset';
        preset: 'claude_code';
    };
    [key: string]: unknown;
    mapped?: { [K in keyof Foo]?: Foo[K] };
    tpl?: `prefix-${string}`;
    cond?: T extends string ? 'a' : 'b';
};
declare type ReqA = { subtype: 'a'; x?: number };
declare type ReqB = { subtype: 'b' | "c" };
declare type ReqInner = ReqA | ReqB | Omit<ReqC, 'y'>;
declare type ReqC = { subtype: 'd'; y: string };
declare class Hidden<T> extends Base<{ x: 1 }> {
    field: string;
    method(): void;
}
declare namespace ns {
    export { Options, ReqA };
}
export declare interface Query extends AsyncGenerator<X, void>, Other {
    interrupt(): Promise<void>;
    get value(): string;
}
declare interface Other { other(): void }
export declare function listThings(_opts?: { dir?: string }): Promise<string[]>;
export declare function listThings(a: number): void;
declare function hidden(): void;
export declare const EVENTS: readonly ['A', 'B'];
export declare type Event = 'A' | 'B';
export { }
declare type Self = { a: string } & Omit<Self, 'b'>;
declare type Loop = Loop | Loop & Loop;
