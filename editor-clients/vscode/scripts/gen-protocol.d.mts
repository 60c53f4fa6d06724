export function typeName(key: string): string;
export function generate(schema: unknown): Promise<string>;
