//! `#[derive(GraphState)]`: the field-by-field merge of a graph's concurrent branches.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Data, DeriveInput, Fields, Ident, Path};

/// A field's reducer, from `#[reducer(...)]`.
enum Reducer {
    None,
    Path(Path),
}

pub(crate) fn expand(input: TokenStream) -> TokenStream {
    match generate(input) {
        Ok(tokens) => tokens,
        Err(error) => error.to_compile_error(),
    }
}

fn generate(input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "GraphState goes on a struct with named fields: each field is merged on its own",
        ));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "GraphState needs named fields: each field is merged on its own",
        ));
    };
    if let Some(param) = input.generics.params.first() {
        return Err(syn::Error::new_spanned(
            param,
            "GraphState cannot be derived for a generic struct",
        ));
    }
    let krate = crate_path();
    let mut merges = Vec::new();
    for field in &fields.named {
        let Some(ident) = &field.ident else { continue };
        let reducer = reducer_of(field)?;
        let label = ident.to_string();
        // Every branch whose value differs from the snapshot's is a writer, in ready order.
        let writers = quote! {
            let writers: ::std::vec::Vec<&_> = branches
                .iter()
                .map(|branch| &branch.#ident)
                .filter(|value| **value != snapshot.#ident)
                .collect();
        };
        let merge = match reducer {
            // The reducer sees every writer: two branches appending the same item both count.
            Reducer::Path(path) => quote! {
                #writers
                match writers.len() {
                    0 => {}
                    1 => merged.#ident = ::core::clone::Clone::clone(writers[0]),
                    _ => {
                        merged.#ident =
                            #path(&snapshot.#ident, writers.into_iter().cloned().collect());
                    }
                }
            },
            // Without a reducer, writers that agree on the new value are not a conflict.
            Reducer::None => quote! {
                #writers
                if let ::core::option::Option::Some((first, rest)) = writers.split_first() {
                    if rest.iter().any(|value| value != first) {
                        return ::core::result::Result::Err(
                            #krate::__private::concurrent_update(#label, writers.len()),
                        );
                    }
                    merged.#ident = ::core::clone::Clone::clone(*first);
                }
            },
        };
        merges.push(quote! { { #merge } });
    }
    Ok(quote! {
        impl #krate::GraphState for #name {
            fn merge(
                snapshot: &Self,
                branches: &[Self],
            ) -> ::core::result::Result<Self, #krate::__private::Error> {
                let mut merged = ::core::clone::Clone::clone(snapshot);
                #(#merges)*
                ::core::result::Result::Ok(merged)
            }
        }
    })
}

fn reducer_of(field: &syn::Field) -> syn::Result<Reducer> {
    let mut found = Reducer::None;
    for attr in &field.attrs {
        if !attr.path().is_ident("reducer") {
            continue;
        }
        let path: Path = attr.parse_args().map_err(|e| {
            syn::Error::new(
                e.span(),
                "write the reducer as #[reducer(concat)], #[reducer(merge_maps)] or \
                 #[reducer(path::to::function)]",
            )
        })?;
        let path = if path.is_ident("concat") || path.is_ident("merge_maps") {
            let krate = crate_path();
            let ident = path
                .get_ident()
                .cloned()
                .unwrap_or_else(|| Ident::new("concat", Span::call_site()));
            syn::parse2(quote!(#krate::reducers::#ident))?
        } else {
            path
        };
        found = Reducer::Path(path);
    }
    Ok(found)
}

fn crate_path() -> TokenStream {
    use proc_macro_crate::{FoundCrate, crate_name};
    match crate_name("deepharness-graph") {
        Ok(FoundCrate::Name(name)) => {
            let name = crate::tool::extern_name(&name, "deepharness-graph", "harness_graph");
            let ident = Ident::new(&name, Span::call_site());
            quote!(::#ident)
        }
        Ok(FoundCrate::Itself) => quote!(::harness_graph),
        Err(_) => match crate_name("deepharness") {
            Ok(FoundCrate::Name(name)) => {
                let ident = Ident::new(&name, Span::call_site());
                quote!(::#ident::graph)
            }
            _ => quote!(::deepharness::graph),
        },
    }
}
