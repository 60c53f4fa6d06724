export function typeName(key: string): string;
export function generate(schema: unknown): Promise<string>;
export function methodKey(method: string): string;
export function constants(schema: unknown): string;
